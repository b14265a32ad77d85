// Client-side encryption across languages and in schedules, against a
// real cairn dev: a TypeScript client starts an encrypted run whose steps
// a Go worker (test/goworker, the same keyring in its environment) and a
// TypeScript worker serve in turn, each decoding what the other
// encrypted; a schedule's input is encrypted by the client; and the
// bucket (the server's file store) holds none of the values in the clear.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";

import { isEncrypted, Keyring } from "../codec.js";
import { Client, defineWorkflow, failure, Worker } from "../index.js";
import { eventually } from "./durable.js";
import { goWorker } from "./goworker.js";
import { bucketHolds, memLogger, serverForFile, serving } from "./server.js";

const srv = serverForFile();

/** A fresh keyring's JSON form, and the keyring. */
function freshRing(): { json: string; ring: Keyring } {
  const json = JSON.stringify({ keys: [{ id: "k1", key: randomBytes(32).toString("base64") }] });
  return { json, ring: Keyring.parse(json) };
}

/** Fails for each value found in the clear in the bucket; the clear value must be found (the search is not blind). */
function assertNoPlaintext(markers: string[], clear: string): void {
  for (const s of markers) assert.deepEqual(bucketHolds(srv.dir, s), [], `${JSON.stringify(s)} is in the bucket in the clear`);
  assert.notDeepEqual(bucketHolds(srv.dir, clear), [], `the clear value ${JSON.stringify(clear)} is not in the bucket: the search is blind`);
}

test("an encrypted run crosses languages: a TypeScript client and worker and a Go worker share one keyring", async () => {
  const { json, ring } = freshRing();
  const client = new Client({ server: srv.url, codec: ring });
  const card = "CARD-4242-PLAIN";
  const tenant = "TENANT-CLEAR";
  const large = "LARGE-PLAIN-".repeat(8000); // ~96 KiB: stored by reference
  // The Go worker's "secret-mixed", step for step: it serves a and fn,
  // this worker b.
  const wf = defineWorkflow({ name: "secret-mixed", version: "1", encrypted: true, clear: ["tenant"] })
    .task("a", () => {
      throw failure("unservable", "step a is served by the Go worker");
    })
    .task(
      "b",
      (ctx, input: { prev: { note: string; card: string; large: number }; tenant: string }) =>
        `TS-OUTPUT-PLAIN saw ${input.prev.note} ${input.prev.card} ${input.prev.large} ${ctx.state<{ v: string }>("balance")?.v} for ${input.tenant}`,
      { after: ["a"], input: { prev: "${steps.a.output}", tenant: "${input.tenant}" } },
    )
    .wait("approve", "approve", { after: ["b"] })
    .function(
      "fn",
      () => {
        throw failure("unservable", "step fn is served by the Go worker");
      },
      { after: ["approve"], input: { prev: "${steps.b.output}", ev: "${steps.approve.output}" } },
    );
  const stopGo = await goWorker(srv.url, { CAIRN_GO_WORKER_KEYRING: json });
  const stopTS = await serving(new Worker(client, { name: "ts-worker", logger: memLogger(), claimWaitMs: 1000 }).register(wf));
  try {
    const { run } = await client.start("secret-mixed", { input: { card, tenant: tenant, large } });
    const stepDone = async (id: string) => (await srv.client.get(run.id)).steps.find((s) => s.id === id)?.status === "completed";
    await eventually("step b to complete", 20_000, () => stepDone("b"));
    await client.sendEvent(run.id, { name: "approve", payload: { by: "EVENT-PLAIN" } });
    const r = await client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    const step = (id: string) => r.steps.find((s) => s.id === id)!;
    const b = `TS-OUTPUT-PLAIN saw GO-OUTPUT-PLAIN ${card} ${large.length} GO-STATE-PLAIN for ${tenant}`;
    // The client decodes what the Go worker encrypted, and the reverse.
    assert.deepEqual(r.input, { card, tenant, large });
    assert.deepEqual(step("a").output, { note: "GO-OUTPUT-PLAIN", card, large: large.length });
    assert.deepEqual(r.state?.["balance"], { v: "GO-STATE-PLAIN" });
    assert.equal(step("b").output, b);
    assert.equal(step("fn").output, `${b}+EVENT-PLAIN+GO-OPRESULT-PLAIN`);
    assert.deepEqual(
      step("fn").operations?.map((op) => `${op.id} ${JSON.stringify(op.result)}`),
      ['/look#0 "GO-OPRESULT-PLAIN"'],
    );
    const completedBy = (id: string) => step(id).attempts.find((a) => a.outcome === "completed")?.worker;
    assert.deepEqual(["a", "b", "fn"].map(completedBy), ["go-worker", "ts-worker", "go-worker"]);
    // A client without the keyring reads ciphertext.
    const raw = await srv.client.get(run.id);
    const rawStep = (id: string) => raw.steps.find((s) => s.id === id)!;
    const input = raw.input as Record<string, unknown>;
    assert.equal(input["tenant"], tenant);
    assert.ok(isEncrypted(input["card"]) && isEncrypted(input["large"]), JSON.stringify(input).slice(0, 200));
    for (const v of [rawStep("a").output, rawStep("b").output, rawStep("approve").output, rawStep("fn").output, raw.state?.["balance"], rawStep("fn").operations?.[0]?.result]) {
      assert.ok(isEncrypted(v), JSON.stringify(v)?.slice(0, 200));
    }
    assertNoPlaintext([card, "LARGE-PLAIN", "GO-OUTPUT-PLAIN", "GO-STATE-PLAIN", "TS-OUTPUT-PLAIN", "EVENT-PLAIN", "GO-OPRESULT-PLAIN"], tenant);
    assert.ok(bucketHolds(srv.dir, "$cairn_payload").length > 0, "no payload stored by reference: the large value was not tested");
  } finally {
    await stopTS();
    await stopGo();
  }
});

test("a schedule's input is encrypted by the client like a start's; the runs it starts decode", async () => {
  const { ring } = freshRing();
  const client = new Client({ server: srv.url, codec: ring });
  const wf = defineWorkflow({ name: "secret-sched-ts", version: "1", encrypted: true, clear: ["tenant"] }).task(
    "a",
    (_ctx, input: { card: string; tenant: string }) => `saw ${input.card} for ${input.tenant}`,
  );
  const stop = await serving(new Worker(client, { logger: memLogger(), claimWaitMs: 1000 }).register(wf));
  try {
    // Yearly: no tick fires during the test; a backfill starts one.
    const s = await client.createSchedule("secret-sched-ts", "0 0 1 1 *", { id: "secret-sched", input: { card: "SCHED-CARD-PLAIN", tenant: "SCHED-TENANT" } });
    const input = s.input as Record<string, unknown>;
    assert.equal(input["tenant"], "SCHED-TENANT");
    assert.ok(isEncrypted(input["card"]), JSON.stringify(input));
    const now = new Date();
    const bf = await client.backfillSchedule(s.id, new Date(now.getTime() - 400 * 86_400_000), now, 1);
    assert.equal(bf.ticks.length, 1);
    const r = await client.wait(bf.ticks[0]!.run, { signal: AbortSignal.timeout(20_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.input, { card: "SCHED-CARD-PLAIN", tenant: "SCHED-TENANT" });
    assert.equal(r.output, "saw SCHED-CARD-PLAIN for SCHED-TENANT");
    assertNoPlaintext(["SCHED-CARD-PLAIN", "saw SCHED-CARD"], "SCHED-TENANT");
    await client.deleteSchedule(s.id);
  } finally {
    await stop();
  }
});

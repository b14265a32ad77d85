// A durable function whose attempts alternate between a Go worker
// (test/goworker, built by make ts-test into $CAIRN_GO_WORKER) and this
// TypeScript worker: each replays the history the other recorded — the
// same operation ids, kinds, results and wake times — and runs only what
// is new.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineFunction, defineWorkflow, StepFailure, Worker } from "../index.js";
import { main, suspended } from "./durable.js";
import { goWorker as startGoWorker } from "./goworker.js";
import { memLogger, serverForFile, serving } from "./server.js";

const srv = serverForFile();

// The naps are an hour on the test server's clock (startTestServer starts
// it with one): a nap ends only when the test moves the clock past it,
// after the worker that must not take the next attempt has stopped,
// however slow the machine.
const HOUR = 3_600_000;
const goWorker = () => startGoWorker(srv.url, { CAIRN_MIXED_NAP: "1h" });

test("a function's attempts alternate between a Go and a TypeScript worker, each replaying the other's history", async () => {
  const seen: { id: string; now: string; random: number; charge: unknown }[] = [];
  let ran = 0;
  const by = () => {
    ran++;
    return { by: "ts" };
  };
  // The Go worker's "mixed-fn", operation for operation.
  const wf = defineFunction({ name: "mixed-fn", version: "1" }, async (ctx, input: { n: number }) => {
    const out = { id: ctx.uuid(), now: ctx.now().toISOString(), random: ctx.random(), charge: undefined as unknown, ship: undefined as unknown, finish: undefined as unknown };
    out.charge = await ctx.step("charge", () => ({ ...by(), n: input.n * 2 }));
    seen.push({ id: out.id, now: out.now, random: out.random, charge: out.charge });
    await ctx.sleep("nap", HOUR);
    out.ship = await ctx.step("ship", by);
    await ctx.sleep("nap", HOUR);
    out.finish = await ctx.step("finish", by);
    return out;
  });

  // Attempt 1 on the Go worker: it records the values and charge, and suspends.
  let stopGo = await goWorker();
  let run: string;
  try {
    run = (await srv.client.start("mixed-fn", { input: { n: 21 } })).run.id;
    await suspended(srv.client, run, 1);
  } finally {
    await stopGo();
  }
  // Attempt 2 here: it replays Go's record, ships, and suspends.
  const w = new Worker(srv.client, { name: "ts-worker", logger: memLogger(), claimWaitMs: 1000 }).register(wf);
  const stopTS = await serving(w);
  try {
    await srv.client.advanceClock(HOUR);
    await suspended(srv.client, run, 2);
  } finally {
    await stopTS();
  }
  // Attempt 3 on the Go worker again: it replays what TypeScript recorded.
  stopGo = await goWorker();
  try {
    await srv.client.advanceClock(HOUR);
    const r = await srv.client.wait(run, { signal: AbortSignal.timeout(20_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    const st = main(r);
    assert.deepEqual(
      st.attempts.map((a) => `${a.worker} ${a.outcome}`),
      ["go-worker suspended", "ts-worker suspended", "go-worker completed"],
    );
    const ops = st.operations ?? [];
    assert.deepEqual(
      ops.map((op) => `${op.id} ${op.kind} ${op.status}`),
      [
        "/uuid#0 value completed",
        "/now#0 value completed",
        "/random#0 value completed",
        "/charge#0 step completed",
        "/nap#0 sleep completed",
        "/ship#0 step completed",
        "/nap#1 sleep completed",
        "/finish#0 step completed",
      ],
    );
    // TypeScript saw what Go recorded, and ran only ship.
    assert.equal(ran, 1);
    assert.equal(seen.length, 1);
    const out = r.output as { id: string; now: string; random: number; charge: unknown; ship: unknown; finish: unknown };
    assert.deepEqual(seen[0], { id: out.id, now: new Date(out.now).toISOString(), random: out.random, charge: { by: "go", n: 42 } });
    assert.equal(ops[0]?.result, out.id);
    assert.deepEqual([out.charge, out.ship, out.finish], [{ by: "go", n: 42 }, { by: "ts" }, { by: "go" }]);
  } finally {
    await stopGo();
  }
});

test("a Go function invokes a workflow only a TypeScript worker serves", async () => {
  let billed = 0;
  const billing = defineWorkflow({ name: "ts-billing", version: "1" }).task("charge", async (ctx, input: { amount: number }) => {
    billed++;
    if (input.amount <= 0) throw new StepFailure("bad_amount", "nothing to bill");
    return { by: "ts", invoice: `inv-${input.amount}` };
  }, { retry: { maxAttempts: 1 } });
  const w = new Worker(srv.client, { name: "ts-biller", logger: memLogger(), claimWaitMs: 1000 }).register(billing);
  const stopTS = await serving(w);
  const stopGo = await goWorker();
  try {
    const ok = (await srv.client.start("go-invoker", { input: { amount: 7 } })).run.id;
    const bad = (await srv.client.start("go-invoker", { input: { amount: 0 } })).run.id;
    const r = await srv.client.wait(ok, { signal: AbortSignal.timeout(20_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.output, { by: "ts", invoice: "inv-7" });
    assert.deepEqual((main(r).operations ?? []).map((op) => `${op.id} ${op.kind} ${op.status}`), ["/bill#0 invoke started", "/bill#0 invoke completed"]);
    const b = await srv.client.wait(bad, { signal: AbortSignal.timeout(20_000) });
    assert.deepEqual(b.output, { class: "bad_amount" }, JSON.stringify(b.error));
    assert.equal(billed, 2);
  } finally {
    await stopGo();
    await stopTS();
  }
});

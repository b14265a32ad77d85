import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { CodecError, isEncrypted, Keyring } from "../codec.js";
import { Client, defineFunction, defineWorkflow, Worker } from "../index.js";
import { bucketHolds, memLogger, serverForFile } from "./server.js";

// The vectors the Go and Python SDKs check too (sdk/codec/testdata).
const here = dirname(fileURLToPath(import.meta.url));
const vectors = JSON.parse(readFileSync(join(here, "../../../codec/testdata/vectors.json"), "utf8")) as {
  keyring: { keys: { id: string; key: string }[] };
  encrypt: { name: string; kid: string; nonce: string; plaintext: string; envelope: unknown }[];
  fail: { name: string; envelope: unknown; error: "unknown_key" | "auth" | "malformed"; kid?: string }[];
  deep: { name: string; value: unknown; decoded: unknown }[];
  is_encrypted: { value: unknown; want: boolean }[];
};

test("codec: the shared vectors", () => {
  const ring = Keyring.parse(vectors.keyring);
  assert.deepEqual(ring.keyIDs, ["k2", "k1"]);
  assert.ok(vectors.encrypt.length >= 10 && vectors.fail.length >= 10);
  for (const v of vectors.encrypt) {
    assert.deepEqual(ring._seal(v.kid, Buffer.from(v.nonce, "base64"), v.plaintext), v.envelope, v.name);
    assert.equal(ring.decryptText(v.envelope), v.plaintext, v.name);
  }
  for (const v of vectors.fail) {
    assert.throws(
      () => ring.decrypt(v.envelope),
      (err: unknown) => err instanceof CodecError && err.kind === v.error && (!v.kid || err.message.includes(JSON.stringify(v.kid))),
      v.name,
    );
  }
  for (const v of vectors.deep) assert.deepEqual(ring.decodeDeep(v.value), v.decoded, v.name);
  for (const v of vectors.is_encrypted) assert.equal(isEncrypted(v.value), v.want, JSON.stringify(v.value));
  // A fresh encryption round-trips and is not repeated.
  const a = ring.encrypt({ x: "é", n: [1, null] });
  assert.notDeepEqual(a, ring.encrypt({ x: "é", n: [1, null] }));
  assert.deepEqual(ring.decrypt(a), { x: "é", n: [1, null] });
});

const srv = serverForFile();

test("codec: an encrypted run completes, and the server answers ciphertext", async () => {
  const ring = Keyring.parse(vectors.keyring);
  const client = new Client({ server: srv.client.server, codec: ring });
  const wf = defineWorkflow({ name: "secret-ts", version: "1", encrypted: true, clear: ["tenant"] })
    .task("a", async (ctx, input: { card: string; tenant: string }) => {
      ctx.setState("balance", "STATE-PLAIN");
      return { note: `saw ${input.card} for ${input.tenant}` };
    })
    .task("b", async (_ctx, input: { prev: { note: string }; t: string }) => `${input.prev.note}/${input.t}`, {
      after: ["a"],
      input: { prev: "${steps.a.output}", t: "${input.tenant}" },
    });
  const w = new Worker(client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  const done = w.serve();
  await Promise.race([w.ready, done]);
  try {
    const { run } = await client.start("secret-ts", { input: { card: "CARD-PLAIN", tenant: "acme" } });
    const r = await client.wait(run.id);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, "saw CARD-PLAIN for acme/acme");
    assert.deepEqual(r.input, { card: "CARD-PLAIN", tenant: "acme" });
    const raw = await srv.client.get(run.id);
    const input = raw.input as Record<string, unknown>;
    assert.ok(isEncrypted(input["card"]), JSON.stringify(input));
    assert.equal(input["tenant"], "acme");
    assert.ok(isEncrypted(raw.output));
    assert.ok(!JSON.stringify(raw).includes("CARD-PLAIN"));
    for (const m of ["CARD-PLAIN", "STATE-PLAIN", "saw CARD"]) assert.deepEqual(bucketHolds(srv.dir, m), [], `${m} is in the bucket in the clear`);
    assert.notDeepEqual(bucketHolds(srv.dir, "acme"), [], "the clear key is not in the bucket: the search is blind");
  } finally {
    w.stop();
    await done;
  }
});

test("codec: a function's run continues as new with its input encrypted like a start's", async () => {
  const ring = Keyring.parse(vectors.keyring);
  const client = new Client({ server: srv.client.server, codec: ring });
  const wf = defineFunction({ name: "secret-cont-ts", version: "1", encrypted: true, clear: ["tenant"] }, (ctx, input: { card: string; tenant: string; next?: boolean }) =>
    input.next ? `continued with ${input.card}` : ctx.continueAsNew({ card: "CONT-CARD-PLAIN", tenant: input.tenant, next: true }),
  );
  const w = new Worker(client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  const done = w.serve();
  await Promise.race([w.ready, done]);
  try {
    const { run } = await client.start("secret-cont-ts", { input: { card: "FIRST-CARD-PLAIN", tenant: "acme" } });
    const r = await client.wait(run.id); // the last run of the chain
    assert.equal(r.continued_from, run.id);
    assert.equal(r.output, "continued with CONT-CARD-PLAIN");
    assert.deepEqual(r.input, { card: "CONT-CARD-PLAIN", tenant: "acme", next: true });
    const raw = (await srv.client.get(r.id)).input as Record<string, unknown>;
    assert.equal(raw["tenant"], "acme");
    assert.ok(isEncrypted(raw["card"]) && isEncrypted(raw["next"]), JSON.stringify(raw));
    for (const m of ["CONT-CARD-PLAIN", "FIRST-CARD-PLAIN"]) assert.deepEqual(bucketHolds(srv.dir, m), [], `${m} is in the bucket in the clear`);
  } finally {
    w.stop();
    await done;
  }
});

// The long-term store against a real cairn dev: steps of concurrent runs
// count into one key with update (no increment lost), memos list by prefix,
// conditions refuse stale writes, and with a codec the bucket holds no value
// in the clear.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, defineWorkflow, isConflict, Keyring, Worker } from "../index.js";
import { bucketHolds, memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("store: concurrent steps update one key, memos list by prefix, the bucket holds ciphertext", async () => {
  const ring = Keyring.parse({ keys: [{ id: "k1", key: Buffer.alloc(32, 7).toString("base64") }] });
  const client = new Client({ server: srv.client.server, codec: ring });
  const tally = client.store("tally-ts");
  const runs = 10;
  const wf = defineWorkflow({ name: "store-count-ts", version: "1" }).task("add", async (ctx) => {
    await tally.put(`memo:${ctx.info.run}`, "TS-MEMO-PLAIN");
    await tally.update<{ ts_tally: number }>("total", (old) => ({ ts_tally: (old?.ts_tally ?? 0) + 1 }));
    return true;
  });
  await whileServing(new Worker(client, { logger: memLogger(), concurrency: 5 }).register(wf), async () => {
    const started = await Promise.all(Array.from({ length: runs }, () => client.start("store-count-ts", {})));
    for (const s of started) {
      const r = await client.wait(s.run.id, { signal: AbortSignal.timeout(30_000) });
      assert.equal(r.status, "completed", JSON.stringify(r.error));
    }
  });
  const total = await tally.get<{ ts_tally: number }>("total");
  assert.equal(total?.value.ts_tally, runs);
  const memos: string[] = [];
  for await (const k of tally.keys("memo:")) memos.push(k.key);
  assert.equal(memos.length, runs);
  assert.deepEqual(bucketHolds(srv.dir, "TS-MEMO-PLAIN"), []);
  assert.deepEqual(bucketHolds(srv.dir, "ts_tally"), []);

  // A write over a version another write replaced is refused; a delete of
  // the current version removes the value.
  const stale = total!.version;
  await tally.put("total", { ts_tally: 0 }, { ifVersion: stale });
  await assert.rejects(tally.put("total", { ts_tally: -1 }, { ifVersion: stale }), isConflict);
  await assert.rejects(tally.put("total", 1, { ifAbsent: true }), isConflict);
  const cur = await tally.get("total");
  await tally.delete("total", cur!.version);
  assert.equal(await tally.get("total"), undefined);
  await tally.put("total", 1, { ifAbsent: true });
});

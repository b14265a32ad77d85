// The result cache against a real cairn dev: a step with a cache runs once
// per key; a later run with the key takes its output without the handler,
// marked cached; invalidating the key runs it again.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("cache: a later run with the key is completed from the cache; invalidation runs the step again", async () => {
  const client = srv.client;
  let calls = 0;
  const wf = defineWorkflow({ name: "cache-ts", version: "1" }).task(
    "get",
    async (_ctx, input: { url: string }) => `${input.url}#${++calls}`,
    { cache: { key: "input.url", ttl: "1h" } },
  );
  const run = async () => {
    const s = await client.start("cache-ts", { input: { url: "u1" } });
    const r = await client.wait(s.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    return r;
  };
  await whileServing(new Worker(client, { logger: memLogger() }).register(wf), async () => {
    // The entry is written just after the complete, so a run started at
    // once may miss it and compute (and write) its own: a cached step
    // comes from one of the runs that computed.
    const computed = new Map<string, unknown>();
    let get;
    for (let i = 0; ; i++) {
      const r = await run();
      get = r.steps.find((s) => s.id === "get");
      if (get?.cached) break;
      computed.set(r.id, get?.output);
      assert.ok(i < 100, "no run was completed from the cache");
    }
    assert.ok(computed.has(get.cached.run), `cached from ${get.cached.run}, not a run that computed`);
    assert.equal(get.output, computed.get(get.cached.run));
    assert.equal(await client.invalidateCache("cache-ts", "get", "u1"), 1);
    assert.equal((await run()).steps.find((s) => s.id === "get")?.cached, undefined);
    assert.ok((await client.invalidateCache("cache-ts", "get")) >= 0);
  });
  assert.throws(
    () => defineWorkflow({ name: "bad", version: "1" }).sleep("nap", "1s", { cache: {} }),
    /cache applies to task steps only/,
  );
});

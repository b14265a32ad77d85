// Search attributes against a real cairn dev: set at start and by a step,
// shown on the run, filtered by list.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("attributes: set at start and by a step; list filters on them", async () => {
  const wf = defineWorkflow({ name: "orders-ts", version: "1" }).task("bill", async (ctx) => {
    ctx.setAttributes({ stage: "billed", vip: null, billed_at: new Date("2026-01-02T03:04:05Z") });
    return 1;
  });
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(wf), async () => {
    const a = await srv.client.start("orders-ts", { attributes: { customer: "acme", amount: 120.5, vip: true } });
    const b = await srv.client.start("orders-ts", { attributes: { customer: "acme", amount: 80 } });
    for (const id of [a.run.id, b.run.id]) {
      const r = await srv.client.wait(id, { signal: AbortSignal.timeout(30_000) });
      assert.equal(r.status, "completed", JSON.stringify(r.error));
    }
    const r = await srv.client.get(a.run.id);
    assert.deepEqual(r.attributes, { customer: "acme", amount: 120.5, stage: "billed", billed_at: "2026-01-02T03:04:05.000Z" });
    const ids = async (...attr: string[]) => (await srv.client.list({ attr, workflow: "orders-ts" })).runs.map((x) => x.id);
    assert.deepEqual(await ids("customer:acme", "amount>100"), [a.run.id]);
    assert.deepEqual(await ids("amount<=120.5"), [b.run.id, a.run.id]);
    assert.equal((await ids("billed_at>=2026-01-01T00:00:00Z")).length, 2);
  });
});

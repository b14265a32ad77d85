import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("a published event starts the workflows its triggers match, once per id; waitAny says which event came", async () => {
  const wf = defineWorkflow({ name: "ts-on-order", version: "1" })
    .on("order.created", "event.payload.total > 100")
    .task("ack", (_ctx, input: { total: number }) => input.total)
    .waitAny("decide", ["approve", "reject"], { after: ["ack"], if: "has(event.payload.by)", timeout: 60_000 });
  assert.deepEqual(wf.definition().on, [{ event: "order.created", if: "event.payload.total > 100" }]);
  const w = new Worker(srv.client, { name: "ts-events", logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  await whileServing(w, async () => {
    const small = await srv.client.publish("order.created", { total: 5 });
    assert.equal(small.runs.length, 0);
    assert.ok(small.id);
    const res = await srv.client.publish("order.created", { total: 500 }, { id: "ts-o1" });
    assert.equal(res.runs.length, 1);
    const again = await srv.client.publish("order.created", { total: 500 }, { id: "ts-o1" });
    assert.equal(again.runs[0]?.existed, true);
    const id = res.runs[0]!.run;
    assert.equal(again.runs[0]?.run, id);
    await srv.client.sendEvent(id, { name: "approve", payload: { by: "ann" }, id: "a1" });
    const done = await srv.client.wait(id);
    assert.equal(done.status, "completed", JSON.stringify(done.error));
    assert.deepEqual(done.event, { name: "order.created", id: "ts-o1" });
    assert.deepEqual(done.output, { event: "approve", id: "a1", payload: { by: "ann" } });
  });
});

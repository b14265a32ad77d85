// Updates against a real cairn dev: a wait step's answer step answers the
// sender, a retry with the update's id gets the same update, and a
// durable function replies to an update it waited for.
import assert from "node:assert/strict";
import { test } from "node:test";

import { APIError, defineFunction, defineWorkflow, Worker } from "../index.js";
import { suspended } from "./durable.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("an update to a wait is answered by the step its answer names; sent again, the same update", async () => {
  const wf = defineWorkflow({ name: "ts-review", version: "1" })
    .wait("approve", "approve", { answer: "decide" })
    .task("decide", (_ctx, input: { by: string }) => `approved by ${input.by}`, { after: ["approve"], input: { by: "${steps.approve.output.by}" } });
  const w = new Worker(srv.client, { name: "ts-updates", logger: memLogger(), claimWaitMs: 1000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("ts-review", {});
    const u = await srv.client.sendUpdate(run.id, "approve", { by: "ann" }, { id: "u1", wait: "20s" });
    assert.equal(u.status, "answered", JSON.stringify(u));
    assert.equal(u.answer, "approved by ann");
    assert.equal(u.step, "approve");
    const again = await srv.client.getUpdate(run.id, "u1");
    assert.equal(again.answer, "approved by ann");
    await assert.rejects(srv.client.sendUpdate(run.id, "approve", { by: "bob" }, { id: "u1" }), (err) => err instanceof APIError && err.status === 409);
  });
});

test("a function waits for an update and replies to it", async () => {
  const wf = defineFunction({ name: "ts-asker", version: "1" }, async (ctx) => {
    const u = await ctx.waitForUpdate<string>("question", "ask", { timeout: "1m" });
    await ctx.reply(u, `you asked ${u.input}`);
    return `answered ${u.id}`;
  });
  const w = new Worker(srv.client, { name: "ts-asker", logger: memLogger(), claimWaitMs: 1000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("ts-asker", {});
    await suspended(srv.client, run.id);
    const u = await srv.client.sendUpdate(run.id, "ask", "why", { id: "q1", wait: "20s" });
    assert.equal(u.status, "answered", JSON.stringify(u));
    assert.equal(u.answer, "you asked why");
    const r = await srv.client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
    assert.equal(r.output, "answered q1");
  });
});

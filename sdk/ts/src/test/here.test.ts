// runHere against a real cairn dev: a script drives a DAG and a durable
// function (a suspending sleep, a continue-as-new) alone, and its claims,
// scoped to its run, never take another run's step.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineFunction, defineWorkflow, runHere, Worker } from "../index.js";
import { memLogger, serverForFile, serving } from "./server.js";

const srv = serverForFile();

test("a script drives a two-step DAG alone and takes no step of another run", async () => {
  let other = "";
  let strays = 0;
  const wf = defineWorkflow({ name: "here-dag-ts", version: "1" })
    .task(
      "double",
      async (ctx, input: { n: number }) => {
        if (ctx.info.run === other) strays++;
        return input.n * 2;
      },
      { input: { n: "${input.n}" } },
    )
    .task("add", async (ctx) => (ctx.output<number>("double") ?? 0) + 1, { after: ["double"] });
  // Register the workflow (a worker that stops at once), then start
  // another run of it that nothing serves.
  await (await serving(new Worker(srv.client, { logger: memLogger(), claimWaitMs: 500 }).register(wf)))();
  other = (await srv.client.start("here-dag-ts", { input: { n: 100 } })).run.id;

  const r = await runHere(srv.client, wf, { n: 20 }, { logger: memLogger(), claimWaitMs: 2000, signal: AbortSignal.timeout(30_000) });
  assert.equal(r.status, "completed", JSON.stringify(r.error));
  assert.equal(r.output, 41);
  assert.notEqual(r.id, other);

  const o = await srv.client.get(other);
  assert.equal(o.status, "running");
  assert.equal(strays, 0);
  for (const st of o.steps) {
    assert.ok((st.attempts ?? []).length === 0 && !st.holder && (st.status === "ready" || st.status === "pending"), `the other run's step ${st.id} was touched: ${JSON.stringify(st)}`);
  }
});

test("a script drives a durable function through a suspension and a continue-as-new alone", async () => {
  let bodies = 0;
  const wf = defineFunction({ name: "here-fn-ts", version: "1" }, async (ctx, n: number) => {
    bodies++;
    const v = await ctx.step("inc", () => n + 1);
    await ctx.sleep("rest", 2500);
    if (v < 2) ctx.continueAsNew(v);
    return v * 10;
  });
  let started = "";
  const r = await runHere(srv.client, wf, 0, { logger: memLogger(), claimWaitMs: 2000, signal: AbortSignal.timeout(60_000), onStart: (run) => (started = run.id) });
  assert.equal(r.status, "completed", JSON.stringify(r.error));
  assert.equal(r.output, 20);
  assert.equal(r.continued_from, started, "the run returned is the one the first continued as");
  assert.equal(bodies, 4, "two runs, each suspended once");
});

test("aborting the script's signal stops serving and leaves the run running", async () => {
  const ctrl = new AbortController();
  const wf = defineWorkflow({ name: "here-stop-ts", version: "1" }).task("hold", async (ctx) => {
    ctrl.abort();
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    throw ctx.signal.reason;
  });
  let started = "";
  await assert.rejects(runHere(srv.client, wf, {}, { logger: memLogger(), claimWaitMs: 2000, drainTimeoutMs: 100, signal: ctrl.signal, onStart: (run) => (started = run.id) }));
  assert.ok(started);
  const o = await srv.client.get(started);
  assert.equal(o.status, "running");
});

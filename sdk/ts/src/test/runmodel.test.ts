// The run model against a real cairn dev: budgets, summaries, reducers, label
// routing, singleton runs and cancel_on.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, RetryableError, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("budget: tokens over the workflow's budget fail the run; a start's own budget lets it finish", async () => {
  let acted = 0;
  const wf = defineWorkflow({ name: "budget-ts", version: "1", budget: { tokens: 150 } })
    .task("draft", async (ctx) => {
      ctx.setUsage({ model: "m", input_tokens: 80, output_tokens: 20 });
      return "draft";
    })
    .task(
      "review",
      async (ctx) => {
        ctx.setUsage({ model: "m", input_tokens: 60 });
        return "ok";
      },
      { after: ["draft"] },
    )
    .task("act", async () => ++acted, { after: ["review"] });
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(wf), async () => {
    const a = await srv.client.start("budget-ts", {});
    const r = await srv.client.wait(a.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, "failed");
    assert.equal(r.error?.class, "budget_exceeded");
    assert.equal(r.error?.step, "review");
    assert.equal(acted, 0);
    const b = await srv.client.start("budget-ts", { budget: { tokens: 1000 } });
    const r2 = await srv.client.wait(b.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r2.status, "completed", JSON.stringify(r2.error));
    assert.equal(r2.budget?.tokens, 1000);
    assert.equal(acted, 1);
  });
});

test("summaries: a failed and a completed attempt keep what their bodies summarised", async () => {
  const wf = defineWorkflow({ name: "summary-ts", version: "1" }).task(
    "fetch",
    async (ctx) => {
      assert.throws(() => ctx.setSummary("x".repeat(5000)), RangeError);
      if (ctx.info.attempt === 1) {
        ctx.setSummary({ pages: 2, stopped: "rate limit" });
        throw new RetryableError("rate limited");
      }
      ctx.setSummary("fetched 3 pages");
      return 3;
    },
    { retry: { maxAttempts: 2, initialBackoff: "10ms" } },
  );
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(wf), async () => {
    const s = await srv.client.start("summary-ts", {});
    const r = await srv.client.wait(s.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    const a = r.steps.find((st) => st.id === "fetch")?.attempts ?? [];
    assert.deepEqual(
      a.map((x) => x.summary),
      [{ pages: 2, stopped: "rate limit" }, "fetched 3 pages"],
    );
  });
});

test("reducers: parallel steps appending to one state key all count", async () => {
  const wf = defineWorkflow({ name: "reduce-ts", version: "1", reducers: { hits: "sum", ids: "append" } });
  for (const id of ["a", "b", "c"]) {
    wf.task(id, async (ctx) => {
      ctx.setStatePatch({ hits: 5, ids: [id] });
      return id;
    });
  }
  await whileServing(new Worker(srv.client, { logger: memLogger(), concurrency: 3 }).register(wf), async () => {
    const s = await srv.client.start("reduce-ts", {});
    const r = await srv.client.wait(s.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.state.hits, 15);
    assert.deepEqual([...(r.state.ids as string[])].sort(), ["a", "b", "c"]);
  });
});

test("labels: a step that requires labels runs only on the worker that has them", async () => {
  const ran: string[] = [];
  const def = () =>
    defineWorkflow({ name: "route-ts", version: "1" }).task(
      "train",
      async (ctx) => {
        ran.push(ctx.info.worker);
        return true;
      },
      { requiresLabels: { gpu: "true" } },
    );
  const plain = new Worker(srv.client, { logger: memLogger(), name: "plain-ts" }).register(def());
  const gpu = new Worker(srv.client, { logger: memLogger(), name: "gpu-ts", labels: { gpu: "true" } }).register(def());
  await whileServing(plain, () =>
    whileServing(gpu, async () => {
      for (let i = 0; i < 3; i++) {
        const s = await srv.client.start("route-ts", {});
        const r = await srv.client.wait(s.run.id, { signal: AbortSignal.timeout(30_000) });
        assert.equal(r.status, "completed", JSON.stringify(r.error));
      }
    }),
  );
  assert.deepEqual(ran, ["gpu-ts", "gpu-ts", "gpu-ts"]);
});

test("singleton: a start while the key's run runs is skipped and answers that run", async () => {
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  const wf = defineWorkflow({ name: "one-sync-ts", version: "1", singleton: { key: "${input.account}", mode: "skip" } }).task("sync", async () => {
    await held;
    return 1;
  });
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(wf), async () => {
    const first = await srv.client.start("one-sync-ts", { input: { account: "a1" } });
    const again = await srv.client.start("one-sync-ts", { input: { account: "a1" } });
    release();
    assert.equal(again.skipped, true);
    assert.equal(again.run.id, first.run.id);
    const r = await srv.client.wait(first.run.id, { signal: AbortSignal.timeout(30_000) });
    assert.equal(r.status, "completed");
  });
});

test("cancel_on: a published event cancels the run whose input it matches", async () => {
  const wf = defineWorkflow({ name: "order-ts", version: "1", cancelOn: [{ event: "order.void", if: "event.payload.order == input.order" }] }).task(
    "hold",
    async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return 0;
    },
  );
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(wf), async () => {
    const one = await srv.client.start("order-ts", { input: { order: 1 } });
    const two = await srv.client.start("order-ts", { input: { order: 2 } });
    const res = await srv.client.publish("order.void", { order: 1 });
    assert.deepEqual(res.cancelled, [one.run.id]);
    assert.equal((await srv.client.get(one.run.id)).status, "cancelled");
    assert.equal((await srv.client.get(two.run.id)).status, "running");
    await srv.client.cancel(two.run.id, "test over");
  });
});

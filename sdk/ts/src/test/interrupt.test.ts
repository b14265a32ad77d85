// A body that throws interrupt(payload) leaves its step interrupted with
// the payload; client.resumeStep runs it again with ctx.resumed, the
// answer and the payload, and the run completes. And a loop: a step's
// next sends the run back until its condition fails.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { APIError, Client, defineWorkflow, interrupt, Worker } from "../index.js";
import { memLogger, startServer, type DevServer } from "./server.js";

let srv: DevServer;
before(async () => {
  srv = await startServer({});
});
after(async () => {
  await srv.stop();
});

/** Runs fn while a worker serves wf. */
async function serving(wf: Parameters<Worker["register"]>[0], fn: () => Promise<void>): Promise<void> {
  const w = new Worker(new Client({ server: srv.url }), { concurrency: 1, logger: memLogger() }).register(wf);
  const done = w.serve();
  try {
    await Promise.race([w.ready, done]);
    await fn();
  } finally {
    w.stop();
    await done;
  }
}

test("interrupt and resumeStep", async () => {
  const wf = defineWorkflow({ name: "approve", version: "1" }).task("ask", async (ctx) => {
    if (!ctx.resumed) throw interrupt({ question: "approve?" });
    return { answer: ctx.resume, asked: ctx.interrupted };
  });
  await serving(wf, async () => {
    const { run } = await srv.client.start("approve", {});
    const until = Date.now() + 20_000;
    for (;;) {
      const r = await srv.client.get(run.id);
      const ask = r.steps.find((s) => s.id === "ask");
      if (ask?.status === "interrupted") {
        assert.deepEqual(ask.interrupt, { question: "approve?" });
        assert.equal(r.status, "running");
        break;
      }
      assert.ok(Date.now() < until, `the step did not interrupt: ${ask?.status}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    await srv.client.resumeStep(run.id, "ask", { approved: true });
    const got = await srv.client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
    assert.equal(got.status, "completed");
    assert.deepEqual(got.output, { answer: { approved: true }, asked: { question: "approve?" } });
    await assert.rejects(srv.client.resumeStep(run.id, "ask", false), (err: unknown) => err instanceof APIError && err.status === 409);
  });
});

test("a loop with next runs until its condition fails", async () => {
  const wf = defineWorkflow({ name: "essay", version: "1" })
    .task("draft", async (_ctx, input: { visit: number }) => ({ words: 100 * input.visit }), { input: { visit: "${visit}" } })
    .task("review", async (ctx) => ({ ok: (ctx.output<{ words: number }>("draft")?.words ?? 0) >= 300 }), {
      after: ["draft"],
      next: [{ to: "draft", if: "!steps.review.output.ok" }],
      maxVisits: 5,
    });
  await serving(wf, async () => {
    const { run } = await srv.client.start("essay", {});
    const got = await srv.client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
    assert.equal(got.status, "completed");
    assert.deepEqual(got.output, { ok: true });
    assert.deepEqual(got.steps.map((s) => [s.id, s.visits]), [["draft", 3], ["review", 3]]);
  });
});

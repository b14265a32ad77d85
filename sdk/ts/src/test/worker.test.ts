import assert from "node:assert/strict";
import { test } from "node:test";

import {
  defineWorkflow,
  LeaseLostError,
  RetryableError,
  retryable,
  failure,
  Worker,
  type WorkflowDef,
} from "../index.js";
import { DropHeartbeats, memLogger, serverForFile, serving, whileServing } from "./server.js";

// The triage workflow of examples/ts, built by tsconfig.example.json into
// dist/test/example (it imports @cairn-dev/cairn: this package, by name).
const { triage } = (await import(new URL("./example/triage.js", import.meta.url).href)) as { triage: WorkflowDef };

const srv = serverForFile();

test("the triage workflow, written in TypeScript, completes", async () => {
  const w = new Worker(srv.client, { name: "ts-triage", logger: memLogger(), claimWaitMs: 2000 }).register(triage);
  await whileServing(w, async () => {
    const ticket = { subject: "Charged twice", body: "URGENT: I was charged twice for my order", customer: "ana@bigcorp.com" };
    const { run } = await srv.client.start("triage", { input: ticket, idempotencyKey: "ticket-1" });
    const again = await srv.client.start("triage", { input: ticket, idempotencyKey: "ticket-1" });
    assert.equal(again.existed, true);
    assert.equal(again.run.id, run.id);
    const progress: number[] = [];
    const done = await srv.client.wait(run.id, { onProgress: (p) => progress.push(p.steps_done) });
    assert.equal(done.status, "completed", JSON.stringify(done.error));
    assert.deepEqual(done.output, {
      queue: "billing-priority",
      text: 'Hi ana@bigcorp.com, thanks for reaching out about "Charged twice". Your ticket is with our billing-priority team; expect an answer within 4 hours.',
    });
    assert.equal(done.state?.category, "billing");
    assert.equal(done.state?.queue, "billing-priority");
    assert.ok(progress.length >= 1, "wait reported progress");
    assert.equal(done.usage?.input_tokens, 9);
    const page = await srv.client.list({ workflow: "triage" });
    assert.ok(page.runs.some((r) => r.id === run.id));
  });
});

test("a retryable error is retried, a non-retryable typed failure is not", async () => {
  let attempts = 0;
  const wf = defineWorkflow({ name: "flaky-ts", version: "1" })
    .task(
      "fetch",
      async (ctx) => {
        attempts++;
        assert.equal(ctx.info.attempt, attempts);
        if (attempts < 3) throw retryable(`upstream 503 (attempt ${attempts})`);
        return { attempts, key: ctx.idempotencyKey };
      },
      { retry: { maxAttempts: 5, initialBackoff: 50 } },
    )
    .task("declined", async () => {
      throw failure("card_declined", "the card was declined");
    }, { after: ["fetch"], retry: { maxAttempts: 5, initialBackoff: 50, nonRetryable: ["card_declined"] } });
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("flaky-ts", {});
    const done = await srv.client.wait(run.id);
    assert.equal(done.status, "failed");
    assert.equal(attempts, 3);
    const fetch = done.steps.find((s) => s.id === "fetch");
    assert.equal(fetch?.status, "completed");
    assert.equal((fetch?.output as { attempts: number }).attempts, 3);
    assert.deepEqual(done.error && { class: done.error.class, step: done.error.step }, { class: "card_declined", step: "declined" });
    const declined = done.steps.find((s) => s.id === "declined");
    assert.equal(declined?.attempts?.length, 1, "a non-retryable class is not retried");
  });
});

test("an at_most_once step that started is never run again", async () => {
  let bodies = 0;
  const wf = defineWorkflow({ name: "amo-ts", version: "1" }).task(
    "charge",
    async () => {
      bodies++;
      throw new RetryableError("connection reset after the charge was sent");
    },
    { atMostOnce: true, retry: { maxAttempts: 5, initialBackoff: 50 } },
  );
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("amo-ts", {});
    const done = await srv.client.wait(run.id);
    assert.equal(done.status, "failed");
    assert.equal(done.error?.class, "retryable");
    await new Promise((r) => setTimeout(r, 500)); // a retry, were there one, would be scheduled at 50 ms
    assert.equal(bodies, 1);
  });
});

test("a fenced lease aborts the body's signal, and the step runs again", async () => {
  // Heartbeats are dropped (a network error) while the first attempt runs,
  // so its lease expires and the reaper offers the step again; the next
  // heartbeat of the first attempt is refused fenced.
  const hb = new DropHeartbeats(srv.url, true);
  const client = hb.client;
  const reasons: unknown[] = [];
  const wf = defineWorkflow({ name: "fenced-ts", version: "1" }).task("slow", async (ctx) => {
    if (ctx.info.attempt === 1) {
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
      reasons.push(ctx.signal.reason);
      throw ctx.signal.reason;
    }
    hb.drop = false;
    // Hold the second attempt until the first one was told.
    while (reasons.length === 0) await new Promise((r) => setTimeout(r, 50));
    return { attempt: ctx.info.attempt };
  });
  const w = new Worker(client, { logger: memLogger(), claimWaitMs: 1000, concurrency: 2 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await client.start("fenced-ts", {});
    const done = await client.wait(run.id);
    assert.equal(done.status, "completed");
    assert.deepEqual(done.output, { attempt: 2 });
    assert.equal(reasons.length, 1);
    assert.ok(reasons[0] instanceof LeaseLostError, `signal reason: ${String(reasons[0])}`);
  });
});

test("stop drains: a running body finishes and reports; past the drain timeout a body is interrupted", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const wf = defineWorkflow({ name: "drain-ts", version: "1" }).task("work", async (ctx) => {
    started();
    await gate;
    return { done: true, attempt: ctx.info.attempt };
  });
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000, drainTimeoutMs: 10_000 }).register(wf);
  const serve = w.serve();
  await Promise.race([w.ready, serve]);
  const { run } = await srv.client.start("drain-ts", {});
  await running;
  w.stop();
  let served = false;
  void serve.then(() => (served = true));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(served, false, "serve waits for the running body");
  release();
  await serve;
  const done = await srv.client.wait(run.id);
  assert.equal(done.status, "completed");
  assert.deepEqual(done.output, { done: true, attempt: 1 });
  // The stopped worker said so: it is listed as gone at once.
  const me = (await srv.client.workers()).find((x) => x.id === w.id);
  assert.equal(me?.alive, false, JSON.stringify(me));
  assert.ok(me?.stopped_at, JSON.stringify(me));

  // Past the drain timeout: the body's signal is aborted with ShutdownError
  // and the attempt is reported interrupted; another worker finishes it.
  const wf2 = defineWorkflow({ name: "drain2-ts", version: "1" }).task("work", async (ctx) => {
    if (ctx.info.attempt === 1) {
      started2();
      await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true }));
    }
    return { attempt: ctx.info.attempt };
  });
  let started2!: () => void;
  const running2 = new Promise<void>((r) => (started2 = r));
  const w2 = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000, drainTimeoutMs: 200 }).register(wf2);
  const serve2 = w2.serve();
  await Promise.race([w2.ready, serve2]);
  const r2 = await srv.client.start("drain2-ts", {});
  await running2;
  w2.stop();
  await serve2;
  const w3 = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf2);
  const stop3 = await serving(w3);
  try {
    const done2 = await srv.client.wait(r2.run.id);
    assert.equal(done2.status, "completed");
    const step = done2.steps.find((s) => s.id === "work");
    assert.equal(step?.attempts?.[0]?.error?.class, "interrupted", JSON.stringify(step?.attempts));
  } finally {
    await stop3();
  }
});

test("a lease of a step this worker has no handler for is failed unservable and served by another", async () => {
  let ranB = 0;
  const partial = defineWorkflow({ name: "unserv-ts", version: "1" })
    .task("a", async () => 1)
    .remoteTask("b", { after: ["a"] });
  const full = defineWorkflow({ name: "unserv-ts", version: "1" })
    .task("a", async () => 1)
    .task("b", async () => ++ranB, { after: ["a"] });
  const client = srv.client;
  const log = memLogger();
  const w1 = new Worker(client, { name: "w-partial", logger: log, claimWaitMs: 1000 }).register(partial);
  const stop1 = await serving(w1);
  let stop2: (() => Promise<void>) | undefined;
  try {
    const { run } = await client.start("unserv-ts", {});
    const deadline = Date.now() + 10_000;
    while (!(await client.journal(run.id)).some((j) => j.type === "step_requeued") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(ranB, 0);
    assert.ok(log.records.some((r) => r.msg.includes("unservable")), "the partial worker logged the unservable lease");
    stop2 = await serving(new Worker(client, { name: "w-full", logger: memLogger(), claimWaitMs: 1000 }).register(full));
    const done = await client.wait(run.id);
    assert.equal(done.status, "completed");
    assert.equal(done.output, 1);
    const b = done.steps.find((s) => s.id === "b");
    assert.equal(b?.output, 1);
    assert.equal(b?.failures ?? 0, 0);
    assert.equal(b?.attempts?.[0]?.worker, "w-partial");
    assert.equal(b?.attempts?.[0]?.error?.class, "unservable");
    assert.equal(b?.attempts?.[0]?.started_at, undefined);
    assert.equal(b?.attempts?.[1]?.worker, "w-full");
  } finally {
    await stop2?.();
    await stop1();
  }
});

// Flow control and batches from TypeScript against a real `cairn dev`:
// a step with a concurrency limit per key runs at most one attempt per
// key at once across two workers; priorities order the attempts a limit
// held back; a batch cancels the running runs its filter matches.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, serving, whileServing } from "./server.js";

const srv = serverForFile();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Span {
  run: string;
  key: string;
  tag: string;
  enter: number;
  exit: number;
}

function overlaps(a: Span, b: Span): boolean {
  return a.enter < b.exit && b.enter < a.exit;
}

test("a concurrency limit of 1 per key holds across workers; priorities order what it held back", async () => {
  const spans: Span[] = [];
  // Bodies of the "gate" run block until released, holding key g's slot.
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const wf = defineWorkflow({ name: "flow-ts", version: "1" }).task(
    "work",
    async (ctx, input: { key: string; tag: string; ms: number }) => {
      const s: Span = { run: ctx.info.run, key: input.key, tag: input.tag, enter: Date.now(), exit: 0 };
      if (input.tag === "gate") await gate;
      else await sleep(input.ms);
      s.exit = Date.now();
      spans.push(s);
      return { tag: input.tag };
    },
    { concurrency: { key: "${input.key}", limit: 1 } },
  ).task("tail", async (ctx) => ({ run: ctx.info.run }), { after: ["work"], priority: 5 });
  const logger = memLogger();
  // Two workers with room for 4 attempts each: without the limit the
  // attempts of one key would run together.
  const w1 = new Worker(srv.client, { name: "flow-a", logger, claimWaitMs: 1000, concurrency: 4 }).register(wf);
  const w2 = new Worker(srv.client, { name: "flow-b", logger, claimWaitMs: 1000, concurrency: 4 }).register(wf);
  const stop1 = await serving(w1);
  const stop2 = await serving(w2);
  try {
    // Keys a and b: three runs each, at once.
    const started: string[] = [];
    for (const key of ["a", "b"]) {
      for (let i = 0; i < 3; i++) {
        const { run } = await srv.client.start("flow-ts", { input: { key, tag: `${key}${i}`, ms: 150 }, priority: i * 10 - 10 });
        started.push(run.id);
      }
    }
    // Key g: a gate run holds the slot; three runs with priorities queue
    // behind it, then the gate opens.
    const { run: gateRun } = await srv.client.start("flow-ts", { input: { key: "g", tag: "gate", ms: 0 } });
    for (;;) {
      const r = await srv.client.get(gateRun.id);
      if (r.steps.some((s) => s.id === "work" && s.holder)) break;
      await sleep(20);
    }
    const queued: { id: string; priority: number }[] = [];
    for (const [tag, priority] of [["low", -50], ["high", 90], ["mid", 20]] as const) {
      const { run } = await srv.client.start("flow-ts", { input: { key: "g", tag, ms: 50 }, priority });
      assert.equal(run.priority ?? 0, priority, "the run reports its priority");
      queued.push({ id: run.id, priority });
    }
    // Let the workers try (and be refused by the limit) for a while.
    await sleep(600);
    assert.equal(spans.filter((s) => s.key === "g").length, 0, "nothing of key g ran while the gate held the slot");
    release();

    for (const id of [...started, gateRun.id, ...queued.map((q) => q.id)]) {
      const r = await srv.client.wait(id);
      assert.equal(r.status, "completed", JSON.stringify(r.error));
    }
    assert.equal(spans.length, 10);
    for (const key of ["a", "b", "g"]) {
      const ks = spans.filter((s) => s.key === key);
      ks.forEach((x, i) =>
        ks.slice(i + 1).forEach((y) =>
          assert.ok(!overlaps(x, y), `key ${key}: ${x.tag} [${x.enter},${x.exit}] and ${y.tag} [${y.enter},${y.exit}] ran at once`),
        ),
      );
    }
    // The workers did run attempts at once (of different keys): the check
    // above could have failed.
    const ab = spans.filter((s) => s.key !== "g");
    assert.ok(ab.some((x) => ab.some((y) => x.key !== y.key && overlaps(x, y))), "no two keys ran at once: the workers ran one attempt at a time");
    // Held back by the limit, key g's runs went highest priority first.
    const order = spans.filter((s) => s.key === "g" && s.tag !== "gate").sort((x, y) => x.enter - y.enter).map((s) => s.tag);
    assert.deepEqual(order, ["high", "mid", "low"]);
  } finally {
    release();
    await stop1();
    await stop2();
  }
});

test("startBatch cancels the running runs its filter matches; getBatch follows it to done", async () => {
  const wf = defineWorkflow({ name: "batch-ts", version: "1" }).wait("hold", "go");
  const other = defineWorkflow({ name: "batch-other-ts", version: "1" }).wait("hold", "go");
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000 }).register(wf).register(other);
  await whileServing(w, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await srv.client.start("batch-ts", { input: { i } })).run.id);
    const keep = (await srv.client.start("batch-other-ts", {})).run.id;
    // One batch-ts run already ended: a cancel filter on running skips it.
    const ended = (await srv.client.start("batch-ts", {})).run.id;
    await srv.client.cancel(ended, "ended first");

    let b = await srv.client.startBatch({ action: "cancel", filter: { workflow: "batch-ts", status: ["running"] }, reason: "ts batch" });
    assert.match(b.id, /^[0-9A-Z]{26}$/);
    const deadline = Date.now() + 30_000;
    while (b.state !== "done") {
      assert.ok(Date.now() < deadline, `batch still ${b.state}: ${JSON.stringify(b)}`);
      await sleep(100);
      b = await srv.client.getBatch(b.id);
    }
    assert.equal(b.action, "cancel");
    assert.equal(b.filter.workflow, "batch-ts");
    assert.deepEqual(b.filter.status, ["running"]);
    assert.equal(b.matched, 5);
    assert.equal(b.applied, 5);
    assert.equal(b.failed, 0);
    assert.deepEqual(b.errors, []);
    assert.ok(b.scanned >= 7, `scanned ${b.scanned}`);
    for (const id of ids) assert.equal((await srv.client.get(id)).status, "cancelled", id);
    assert.equal((await srv.client.get(keep)).status, "running", "a run of another workflow is left alone");
    assert.equal((await srv.client.get(ended)).status, "cancelled");

    await assert.rejects(srv.client.getBatch("01ARZ3NDEKTSV4RRFFQ69G5FAV"), (e: any) => e.status === 404);
    await assert.rejects(
      srv.client.startBatch({ action: "cancel", filter: {} }),
      (e: any) => e.status === 422 || e.status === 400,
    );
  });
});

test("pause holds a run's next step until resume; wait follows the run through the pause", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let began!: () => void;
  const started = new Promise<void>((r) => (began = r));
  const wf = defineWorkflow({ name: "pause-ts", version: "1" })
    .task("first", async () => {
      began();
      await gate;
      return 1;
    })
    .task("second", async () => 2, { after: ["first"] });
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("pause-ts", {});
    await started;
    assert.equal((await srv.client.pause(run.id)).status, "paused");
    assert.equal((await srv.client.pause(run.id)).status, "paused", "pausing again changes nothing");
    const waited = srv.client.wait(run.id);
    release();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await srv.client.get(run.id);
      if (r.steps.find((s) => s.id === "first")?.status === "completed") {
        assert.equal(r.status, "paused");
        assert.equal(r.steps.find((s) => s.id === "second")?.status, "pending");
        break;
      }
      assert.ok(Date.now() < deadline, `first never completed: ${JSON.stringify(r.steps)}`);
      await sleep(50);
    }
    assert.equal((await srv.client.resume(run.id)).status, "running");
    assert.equal((await waited).status, "completed");
    await assert.rejects(srv.client.pause(run.id), (e: any) => e.status === 409);
  });
});

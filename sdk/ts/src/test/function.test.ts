// Durable functions against a real cairn dev: steps run once across a
// suspension, a lost driver resumes from its checkpoints, changed code is
// caught (and gated by patched), step errors keep their class, and a
// function waits for events.
import assert from "node:assert/strict";
import { test } from "node:test";

import { classOf, defineFunction, type DurableContext, failure, retryable, type Run, Worker } from "../index.js";
import { eventually, main, suspended } from "./durable.js";
import { DropHeartbeats, memLogger, serverForFile, serving, whileServing } from "./server.js";

const srv = serverForFile();

const worker = (...wfs: Parameters<Worker["register"]>) => new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000 }).register(...wfs);

/** A bounded wait for the run to end. */
async function ended(run: string, ms = 20_000): Promise<Run> {
  const signal = AbortSignal.timeout(ms);
  return srv.client.wait(run, { signal });
}

test("a function runs its steps once across a suspension", async () => {
  let charges = 0;
  let ships = 0;
  let bodies = 0;
  const ids: string[] = [];
  const wf = defineFunction({ name: "checkout-ts", version: "1" }, async (ctx, o: { item: string; qty: number }) => {
    bodies++;
    const id = ctx.uuid();
    ids.push(id);
    const charge = await ctx.step("charge", async () => {
      charges++;
      return `ch_${o.item}`;
    });
    await ctx.sleep("cool-off", 3000);
    const shipped = await ctx.step("ship", () => {
      ships++;
      return o.qty > 0;
    });
    return { charge, shipped, id };
  });
  await whileServing(worker(wf), async () => {
    const { run } = await srv.client.start("checkout-ts", { input: { item: "book", qty: 2 } });
    const r = await ended(run.id);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.output, { charge: "ch_book", shipped: true, id: ids[0] });
    assert.deepEqual([charges, ships, bodies, ids[1]], [1, 1, 2, ids[0]], "charge, ship once; the body twice; the same uuid");
    const st = main(r);
    assert.deepEqual(
      st.operations?.map((op) => `${op.seq} ${op.id} ${op.kind} ${op.status}`),
      ["0 /uuid#0 value completed", "1 /charge#0 step completed", "2 /cool-off#0 sleep completed", "3 /ship#0 step completed"],
    );
    assert.deepEqual(
      st.attempts.map((a) => a.outcome),
      ["suspended", "completed"],
    );
    const wake = Date.parse(st.operations![2]!.wake_at!);
    const resumed = Date.parse(st.attempts[1]!.claimed_at!);
    assert.ok(resumed >= wake && resumed - wake < 3000, `the sleep ended at ${st.operations![2]!.wake_at}, the function resumed at ${st.attempts[1]!.claimed_at}`);
  });
});

test("a driver whose lease is lost resumes from its checkpoints on the next attempt", async () => {
  // Heartbeats are dropped (a network error) once "first" is
  // checkpointed, so the lease expires and the reaper offers the driver
  // again; the first attempt's next heartbeat is refused fenced.
  const hb = new DropHeartbeats(srv.url);
  const client = hb.client;
  let firsts = 0;
  let seconds = 0;
  const reasons: unknown[] = [];
  const wf = defineFunction({ name: "lossy-ts", version: "1" }, async (ctx: DurableContext) => {
    const a = await ctx.step("first", () => {
      firsts++;
      return "a";
    });
    return ctx.step("second", async (signal) => {
      if (++seconds === 1) {
        await eventually("first to be checkpointed", 10_000, async () => main(await srv.client.get(ctx.info.run)).operations?.length === 1);
        hb.drop = true;
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        reasons.push(signal.reason);
        throw signal.reason;
      }
      hb.drop = false;
      return a + "b";
    });
  });
  const w = new Worker(client, { logger: memLogger(), claimWaitMs: 1000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await client.start("lossy-ts", {});
    const r = await ended(run.id);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, "ab");
    assert.deepEqual([firsts, seconds], [1, 2], "first ran once, second twice");
    assert.deepEqual(
      main(r).attempts.map((a) => a.outcome),
      ["lost", "completed"],
    );
    await eventually("the first attempt to learn it lost its lease", 5000, () => reasons.length === 1);
    assert.equal((reasons[0] as Error).name, "LeaseLostError");
  });
});

test("changed code fails a run in flight with class nondeterminism; patched gates a change", async () => {
  const old = async (ctx: DurableContext) => {
    await ctx.step("a", () => 1);
    await ctx.sleep("wait", 2500);
    return "old";
  };
  // v1 runs two runs to their sleep, then a worker with changed code
  // serves them: one change breaks the history, one is gated.
  const w1 = worker(defineFunction({ name: "changing-ts", version: "1" }, old), defineFunction({ name: "gated-ts", version: "1" }, old));
  const stop1 = await serving(w1);
  const broken = (await srv.client.start("changing-ts", {})).run.id;
  const gated = (await srv.client.start("gated-ts", {})).run.id;
  try {
    await Promise.all([suspended(srv.client, broken), suspended(srv.client, gated)]);
  } finally {
    await stop1();
  }
  const changed = defineFunction({ name: "changing-ts", version: "1" }, async (ctx) => {
    await ctx.sleep("a", 1); // a step became a sleep
    return "new";
  });
  const patched = defineFunction({ name: "gated-ts", version: "1" }, async (ctx) => (ctx.patched("skip-a") ? "patched" : old(ctx)));
  await whileServing(worker(changed, patched), async () => {
    let r = await ended(broken);
    assert.equal(r.status, "failed");
    assert.equal(r.error?.class, "nondeterminism");
    assert.match(r.error?.message ?? "", /^nondeterminism in run \S+: replay reached sleep "\/a#0" where the history records step "\/a#0" \(seq 0\); the code changed under a run in flight/);
    r = await ended(gated);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, "old");
    const fresh = (await srv.client.start("gated-ts", {})).run.id;
    r = await ended(fresh);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, "patched");
    assert.deepEqual(
      main(r).operations?.map((op) => `${op.id} ${op.kind}`),
      ["/patch:skip-a#0 patch"],
    );
  });
});

test("a step's error is retried in the attempt by its class; an at_most_once step that started is never run again", async () => {
  let tries = 0;
  let hangs = 0;
  const wf = defineFunction({ name: "errs-ts", version: "1" }, async (ctx) => {
    const n = await ctx.step(
      "flaky",
      () => {
        if (++tries < 3) throw retryable("not yet");
        return 7;
      },
      { retry: { maxAttempts: 3, initialBackoff: 10 } },
    );
    await ctx.step(
      "declined",
      () => {
        throw failure("card_declined", "insufficient funds");
      },
      { atMostOnce: true },
    );
    return n;
  });
  // An at_most_once step whose attempt ended without its outcome (the
  // worker drained it away) fails with class lost on replay, unrun.
  const lostWf = defineFunction({ name: "amo-lost-ts", version: "1" }, async (ctx) => {
    try {
      await ctx.step(
        "charge",
        async (signal) => {
          hangs++;
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
          throw signal.reason;
        },
        { atMostOnce: true },
      );
    } catch (err) {
      return `charge: ${classOf(err)}: ${(err as Error).message}`;
    }
    return "charged";
  });
  await whileServing(worker(wf), async () => {
    const r = await ended((await srv.client.start("errs-ts", {})).run.id);
    assert.equal(r.status, "failed");
    assert.equal(r.error?.class, "card_declined");
    assert.equal(r.error?.message, "insufficient funds");
    assert.equal(tries, 3);
    assert.deepEqual(
      main(r).operations?.map((op) => `${op.id} ${op.status} ${op.error?.class ?? JSON.stringify(op.result)}`),
      ["/flaky#0 completed 7", "/declined#0 started undefined", "/declined#0 failed card_declined"],
    );
  });
  // The first worker drains while the step runs: the function suspends
  // (no failure spent) with the step started; the next replays it.
  const w1 = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000, drainTimeoutMs: 100 }).register(lostWf);
  const stop1 = await serving(w1);
  const run = (await srv.client.start("amo-lost-ts", {})).run.id;
  try {
    await eventually("charge to start", 10_000, async () => main(await srv.client.get(run)).operations?.length === 1);
  } finally {
    await stop1();
  }
  await whileServing(worker(lostWf), async () => {
    const r = await ended(run);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.match(r.output as string, /^charge: lost: at_most_once step \/charge#0 started in an earlier attempt without recording an outcome/);
    assert.equal(hangs, 1);
    assert.deepEqual(
      main(r).attempts.map((a) => a.outcome),
      ["suspended", "completed"],
    );
  });
});

test("a step's backoff longer than an inline sleep suspends the function between tries", async () => {
  // Each wait is a sleep of the step, /<step>#<k>.retry#<n>, holding the
  // failures so far; the replay after the step completed (the sleep
  // after it) passes its waits unread.
  let tries = 0;
  let bodies = 0;
  const wf = defineFunction({ name: "slow-retry-ts", version: "1" }, async (ctx) => {
    bodies++;
    const n = await ctx.step(
      "flaky",
      () => {
        if (++tries < 3) throw retryable(`not yet (${tries})`);
        return tries;
      },
      { retry: { maxAttempts: 5, initialBackoff: 3000, multiplier: 1 } },
    );
    await ctx.sleep("after", 2500);
    return n;
  });
  await whileServing(worker(wf), async () => {
    const r = await ended((await srv.client.start("slow-retry-ts", {})).run.id, 40_000);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, 3);
    assert.equal(tries, 3, "the step's body ran three times");
    assert.equal(bodies, 4, "the body ran after each wait and after the sleep");
    const st = main(r);
    assert.deepEqual(
      st.attempts.map((a) => a.outcome),
      ["suspended", "suspended", "suspended", "completed"],
    );
    const ops = st.operations ?? [];
    assert.deepEqual(
      ops.map((op) => `${op.id} ${op.kind} ${op.status} ${JSON.stringify(op.result)}`),
      ['/flaky#0.retry#0 sleep completed {"failures":1}', '/flaky#0.retry#1 sleep completed {"failures":2}', "/flaky#0 step completed 3", "/after#0 sleep completed undefined"],
    );
    for (const i of [0, 1]) {
      const wake = Date.parse(ops[i]!.wake_at!);
      const resumed = Date.parse(st.attempts[i + 1]!.claimed_at!);
      assert.ok(resumed >= wake && resumed - wake < 3000, `retry wait ${i} ended at ${ops[i]!.wake_at}, the function resumed at ${st.attempts[i + 1]!.claimed_at}`);
    }
  });
});

test("a function waits for an event, suspended, and a wait past its timeout throws class timeout", async () => {
  const wf = defineFunction({ name: "approval-ts", version: "1" }, async (ctx) => {
    const d = await ctx.waitForEvent<{ by: string }>("approval", "approve", { timeout: "1m" });
    try {
      await ctx.waitForEvent("second-look", "never", { timeout: 3000 });
      return "the second look came";
    } catch (err) {
      if (classOf(err) !== "timeout") throw err;
    }
    return `approved by ${d.by}`;
  });
  const w = worker(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("approval-ts", {});
    await suspended(srv.client, run.id);
    // The suspension is committed before the worker's call returns: the
    // slot frees once its answer is read (as sdk/function_test.go waits).
    await eventually("the worker to hold no lease while the function waits", 5_000, () => w.inFlight === 0);
    await srv.client.sendEvent(run.id, { name: "approve", payload: { by: "ann" } });
    const r = await ended(run.id);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, "approved by ann");
    const ops = main(r).operations ?? [];
    assert.deepEqual(
      ops.map((op) => `${op.id} ${op.status}`),
      ["/approval#0 started", "/approval#0 completed", "/second-look#0 started", "/second-look#0 failed"],
    );
    assert.deepEqual(ops[1]?.result, { by: "ann" });
    assert.equal(ops[3]?.error?.class, "timeout");
    assert.match(ops[3]?.error?.message ?? "", /^no event "never" by \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(wait \/second-look#0\)$/);
  });
});

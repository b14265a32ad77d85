// Durable functions at their edges, against a real cairn dev: branches of
// a map under a limit that park inside a nested parallel suspend the
// function, a step that finishes after the drain cut it off keeps its
// result, an at_most_once step's outcome is checkpointed at once, and a
// large event payload (stored by reference) reaches waitForEvent as its
// value, and large results (a step's, an invoked run's output) reach the
// replay as theirs; race returns the first branch to end, and records it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineFunction, type DurableContext, type Run, Worker } from "../index.js";
import { main, suspended } from "./durable.js";
import { memLogger, serverForFile, serving, whileServing } from "./server.js";

const srv = serverForFile();

const worker = (...wfs: Parameters<Worker["register"]>) => new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000 }).register(...wfs);

/** A bounded wait for the run to end. */
async function ended(run: string, ms = 20_000): Promise<Run> {
  return srv.client.wait(run, { signal: AbortSignal.timeout(ms) });
}

const start = async (workflow: string, input?: unknown) => (await srv.client.start(workflow, input === undefined ? {} : { input })).run.id;

/** Rejects past ms. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(t));
}

test("branches of a map under a limit that park inside a nested parallel suspend the function", async () => {
  // A branch waiting for a slot does not count as running: once every
  // started branch parks, the function suspends (and the next item runs
  // on a later attempt) instead of holding the attempt forever.
  const wf = defineFunction({ name: "nested-ts", version: "1" }, async (ctx) => {
    const out = await ctx.map(
      "outer",
      [0, 1],
      async (ctx, x) => {
        await ctx.parallel("inner", (ctx) => ctx.sleep("nap", 3000)); // longer than an inline sleep: it parks
        return x;
      },
      { limit: 1 },
    );
    return out;
  });
  await whileServing(worker(wf), async () => {
    const r = await ended(await start("nested-ts"));
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.output, [0, 1]);
    const st = main(r);
    assert.ok(st.attempts.filter((a) => a.outcome === "suspended").length >= 1, `the function suspended: ${JSON.stringify(st.attempts.map((a) => a.outcome))}`);
    assert.deepEqual(
      (st.operations ?? []).map((op) => `${op.id} ${op.kind}`).sort(),
      ["/outer#0/0/inner#0/0/nap#0 sleep", "/outer#0/1/inner#0/0/nap#0 sleep"],
    );
  });
});

test("a step that finishes after the drain cut its function off keeps its result", async () => {
  // The suspension's checkpoint carries it: the at_most_once step is not
  // failed as lost on the next attempt, nor run again.
  let runs = 0;
  let began!: () => void;
  const beganP = new Promise<void>((r) => (began = r));
  const wf = defineFunction({ name: "drained-keeps-ts", version: "1" }, async (ctx) =>
    ctx.step(
      "charge",
      async (signal) => {
        if (++runs === 1) {
          began();
          await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
          await new Promise((r) => setTimeout(r, 50)); // it finishes its side effect anyway
        }
        return "charged";
      },
      { atMostOnce: true },
    ),
  );
  const stop1 = await serving(new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000, drainTimeoutMs: 200 }).register(wf));
  let run: string;
  try {
    run = await start("drained-keeps-ts");
    await within(beganP, 10_000, "the step to begin");
  } finally {
    await within(stop1(), 5_000, "the drain");
  }
  await whileServing(worker(wf), async () => {
    const r = await ended(run);
    assert.equal(r.status, "completed", `${JSON.stringify(r.error)}; history ${JSON.stringify(main(r).operations)}`);
    assert.equal(r.output, "charged");
    assert.equal(runs, 1, "the step ran once");
    assert.deepEqual(
      main(r).operations?.map((op) => `${op.id} ${op.status}`),
      ["/charge#0 started", "/charge#0 completed"],
    );
    assert.deepEqual(
      main(r).attempts.map((a) => a.outcome),
      ["suspended", "completed"],
    );
  });
});

test("an at_most_once step's outcome is checkpointed before the step returns", async () => {
  let seen: string[] | undefined;
  const wf = defineFunction({ name: "amo-now-ts", version: "1" }, async (ctx) => {
    const v = await ctx.step("charge", () => "charged", { atMostOnce: true });
    // Not batched: it is on record already, before any background flush.
    seen ??= main(await srv.client.get(ctx.info.run)).operations?.map((op) => `${op.id} ${op.status}`);
    return v;
  });
  await whileServing(worker(wf), async () => {
    const r = await ended(await start("amo-now-ts"));
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(seen, ["/charge#0 started", "/charge#0 completed"]);
  });
});

test("an event payload stored by reference reaches waitForEvent as its value", async () => {
  const big = "x".repeat(100 << 10); // over the inline size
  let got: unknown;
  const wf = defineFunction({ name: "bigev-ts", version: "1" }, async (ctx) => {
    const s = await ctx.waitForEvent<string>("w", "go", { timeout: "1m" });
    got = s;
    return typeof s === "string" ? s.length : `not a string: ${JSON.stringify(s).slice(0, 120)}`;
  });
  await whileServing(worker(wf), async () => {
    const run = await start("bigev-ts");
    await suspended(srv.client, run);
    await srv.client.sendEvent(run, { name: "go", payload: big });
    const r = await ended(run);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, big.length);
    assert.equal(got, big);
  });
});

test("results too large for the run record reach the replay as their values", async () => {
  // A step's result and an invoked run's output over the inline size are
  // recorded by reference; the replays after the invoke and the sleep
  // read them through the lease.
  const big = "y".repeat(100 << 10);
  let bodies = 0;
  const child = defineFunction({ name: "bigchild-ts", version: "1" }, () => big);
  const wf = defineFunction({ name: "bigres-ts", version: "1" }, async (ctx) => {
    bodies++;
    const s = await ctx.step("make", () => big);
    const c = await ctx.invoke<string>("child", { workflow: "bigchild-ts" });
    await ctx.sleep("nap", 3000);
    if (s !== big || c !== big) throw new Error(`replayed ${String(s).slice(0, 80)} and ${String(c).slice(0, 80)}, want ${big.length} bytes`);
    return s.length + c.length;
  });
  await whileServing(worker(wf, child), async () => {
    const r = await ended(await start("bigres-ts"), 30_000);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.equal(r.output, 2 * big.length);
    assert.ok(bodies >= 3, `the body ran ${bodies} times, want a replay after the invoke and after the sleep`);
    const ops = main(await srv.client.get(r.id)).operations ?? [];
    const make = ops.find((op) => op.id === "/make#0" && op.status === "completed");
    assert.ok(make && JSON.stringify(make.result).includes("$cairn_payload"), `the step's result is recorded by reference: ${JSON.stringify(make?.result).slice(0, 200)}`);
  });
});

test("race returns the branch that ends first and records it; a replay runs only the winner", async () => {
  // A step against a sleep ends at once (the function then suspends, and
  // its replay runs only the step); a wait against a sleep suspends the
  // function until the first of them: the event, or the sleep's end.
  const naps = new Map<string, number>();
  const fasts = new Map<string, number>();
  const wf = defineFunction({ name: "racer-ts", version: "1" }, async (ctx, o: { quick?: boolean; napMs: number }) => {
    const run = ctx.info.run;
    const napping = async (ctx: DurableContext) => {
      naps.set(run, (naps.get(run) ?? 0) + 1);
      await ctx.sleep("nap", o.napMs);
      return "slept";
    };
    if (o.quick) {
      const { index, value } = await ctx.race(
        "quick",
        (ctx) => {
          fasts.set(run, (fasts.get(run) ?? 0) + 1);
          return ctx.step("fast", () => "fast");
        },
        napping,
      );
      await ctx.sleep("after", 2500); // the next attempt replays the race
      return `${index} ${value}`;
    }
    const { index, value } = await ctx.race("approval", (ctx) => ctx.waitForEvent<string>("ok", "approve"), napping);
    return `${index} ${value}`;
  });
  await whileServing(worker(wf), async () => {
    const quick = await start("racer-ts", { quick: true, napMs: 3000 });
    const approved = await start("racer-ts", { napMs: 15_000 });
    const timedOut = await start("racer-ts", { napMs: 3000 });
    await suspended(srv.client, approved);
    await srv.client.sendEvent(approved, { name: "approve", payload: "yes" });
    const [q, a, t] = await Promise.all([ended(quick), ended(approved), ended(timedOut)]);
    assert.equal(q.status, "completed", JSON.stringify(q.error));
    assert.equal(q.output, "0 fast");
    assert.deepEqual(
      main(q).attempts.map((x) => x.outcome),
      ["suspended", "completed"],
    );
    assert.deepEqual([fasts.get(quick), naps.get(quick)], [2, 1], "the replay ran only the winner");
    assert.equal(a.status, "completed", JSON.stringify(a.error));
    assert.equal(a.output, "0 yes");
    assert.equal(t.status, "completed", JSON.stringify(t.error));
    assert.equal(t.output, "1 slept");
    for (const [r, id, w] of [
      [q, "/quick#0", 0],
      [a, "/approval#0", 0],
      [t, "/approval#0", 1],
    ] as const) {
      const won = main(r).operations?.find((op) => op.id === id);
      assert.equal(won?.kind, "value");
      assert.equal(won?.result, w, `the recorded winner of ${r.id}: ${JSON.stringify(main(r).operations)}`);
    }
  });
});

// Durable functions that invoke other workflows and fan out, against a
// real cairn dev: a function invokes a DAG (and handles its failure by
// class), a DAG runs a function as its child step, branches' invokes are
// taken one per suspension, map bounds its branches
// and suspends once for a branch's long sleep, parallel runs branches in
// scopes of their own.
import assert from "node:assert/strict";
import { test } from "node:test";

import { classOf, defineFunction, defineWorkflow, type DurableContext, failure, type Run, Worker } from "../index.js";
import { main } from "./durable.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

const worker = (...wfs: Parameters<Worker["register"]>) => new Worker(srv.client, { logger: memLogger(), claimWaitMs: 1000 }).register(...wfs);

/** A bounded wait for the run to end. */
async function ended(run: string, ms = 20_000): Promise<Run> {
  return srv.client.wait(run, { signal: AbortSignal.timeout(ms) });
}

const start = async (workflow: string, input?: unknown) => (await srv.client.start(workflow, input === undefined ? {} : { input })).run.id;

type Order = { item: string; qty: number };

test("a function invokes a DAG and handles its failure by class; a DAG runs a function as its child step; branches invoke one run per suspension", async () => {
  let billed = 0;
  const billing = defineWorkflow({ name: "billing-ts", version: "1" }).task(
    "charge",
    (_ctx, o: Order) => {
      billed++;
      if (o.qty === 0) throw failure("empty_order", "nothing to bill");
      return `invoice ${o.item} x${o.qty}`;
    },
    { retry: { nonRetryable: ["empty_order"] } },
  );
  const shop = defineFunction({ name: "shop-ts", version: "1" }, async (ctx, o: Order) => {
    try {
      return await ctx.invoke<string>("bill", { workflow: "billing-ts", input: o });
    } catch (err) {
      if (classOf(err) !== "empty_order") throw err;
      return `nothing to do: ${(err as Error).message}`;
    }
  });
  const ghost = defineFunction({ name: "ghost-ts", version: "1" }, (ctx) => ctx.invoke("haunt", { workflow: "no-such-workflow-ts", version: "1" }));
  // Two branches invoke: the attempt suspends for one run at a time.
  const many = defineFunction({ name: "shop-many-ts", version: "1" }, (ctx, orders: Order[]) =>
    ctx.map("bill", orders, (ctx, o) => ctx.invoke<string>("run", { workflow: "billing-ts", version: "1", input: o })),
  );
  const outer = defineWorkflow({ name: "outer-ts", version: "1" }).child("shop", "shop-ts", { input: { item: "pen", qty: 3 } });
  await whileServing(worker(billing, shop, ghost, many, outer), async () => {
    const [ok, empty, nested, missing, fanned] = await Promise.all(
      [
        start("shop-ts", { item: "book", qty: 2 }),
        start("shop-ts", { item: "air", qty: 0 }),
        start("outer-ts"),
        start("ghost-ts"),
        start("shop-many-ts", [
          { item: "cup", qty: 1 },
          { item: "mug", qty: 4 },
        ]),
      ].map(async (id) => ended(await id)),
    );

    assert.equal(ok!.status, "completed", JSON.stringify(ok!.error));
    assert.equal(ok!.output, "invoice book x2");
    assert.deepEqual(
      main(ok!).operations?.map((op) => `${op.id} ${op.kind} ${op.status}`),
      ["/bill#0 invoke started", "/bill#0 invoke completed"],
    );
    assert.deepEqual(
      main(ok!).attempts.map((a) => a.outcome),
      ["suspended", "completed"],
    );

    assert.equal(empty!.status, "completed", JSON.stringify(empty!.error));
    assert.match(empty!.output as string, /^nothing to do: child run \S+ failed: nothing to bill$/);
    const failed = main(empty!).operations?.[1];
    assert.deepEqual([failed?.status, failed?.error?.class], ["failed", "empty_order"]);

    assert.equal(nested!.status, "completed", JSON.stringify(nested!.error));
    assert.equal(nested!.output, "invoice pen x3");

    assert.equal(missing!.status, "failed");
    assert.equal(missing!.error?.class, "fatal");
    assert.match(missing!.error?.message ?? "", /^the run of workflow no-such-workflow-ts could not start/);

    assert.equal(fanned!.status, "completed", JSON.stringify(fanned!.error));
    assert.deepEqual(fanned!.output, ["invoice cup x1", "invoice mug x4"]);
    assert.deepEqual(
      main(fanned!).attempts.map((a) => a.outcome),
      ["suspended", "suspended", "completed"],
    );
    assert.deepEqual(
      main(fanned!).operations?.map((op) => `${op.id} ${op.status}`),
      ["/bill#0/0/run#0 started", "/bill#0/1/run#0 started", "/bill#0/0/run#0 completed", "/bill#0/1/run#0 completed"],
    );

    assert.equal(billed, 5, "each invoked run billed once");
  });
});

test("map runs at most limit items at once, and a branch's long sleep suspends the function once", async () => {
  const runs = new Map<number, number>();
  let active = 0;
  let most = 0;
  const wf = defineFunction({ name: "fan-ts", version: "1" }, async (ctx, xs: number[]) => {
    const squares = await ctx.map(
      "square",
      xs,
      async (ctx, x) => {
        const v = await ctx.step("mul", async () => {
          runs.set(x, (runs.get(x) ?? 0) + 1);
          most = Math.max(most, ++active);
          await new Promise((r) => setTimeout(r, 100));
          active--;
          return x * x;
        });
        if (x === 3) await ctx.sleep("rest", 3000); // one branch suspends the function
        return v;
      },
      { limit: 2 },
    );
    return squares;
  });
  await whileServing(worker(wf), async () => {
    const r = await ended(await start("fan-ts", [1, 2, 3, 4, 5]));
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.output, [1, 4, 9, 16, 25]);
    assert.deepEqual([...runs.entries()].sort(), [1, 2, 3, 4, 5].map((x) => [x, 1]), "each item's step ran once");
    assert.equal(most, 2, "at most limit items at once");
    const st = main(r);
    assert.deepEqual(
      st.attempts.map((a) => a.outcome),
      ["suspended", "completed"],
    );
    assert.deepEqual(
      (st.operations ?? []).map((op) => `${op.id} ${op.kind} ${op.status}`).sort(),
      [
        "/square#0/0/mul#0 step completed",
        "/square#0/1/mul#0 step completed",
        "/square#0/2/mul#0 step completed",
        "/square#0/2/rest#0 sleep completed",
        "/square#0/3/mul#0 step completed",
        "/square#0/4/mul#0 step completed",
      ],
    );
    // The function suspended once every item was done, until the sleep's end.
    const wake = Date.parse((st.operations ?? []).find((op) => op.kind === "sleep")!.wake_at!);
    assert.ok(Date.parse(st.attempts[1]!.claimed_at!) >= wake, "resumed after the sleep");
  });
});

test("parallel runs branches in scopes of their own; a branch's error is thrown with its class", async () => {
  const wf = defineFunction({ name: "both-ts", version: "1" }, async (ctx: DurableContext) => {
    const [a, b] = await ctx.parallel(
      "both",
      (ctx) => ctx.step("a", () => 1),
      async (ctx) => `${await ctx.step("b", () => "two")}:${ctx.uuid()}`,
    );
    try {
      await ctx.parallel(
        "pick",
        (ctx) => ctx.step("ok", () => true),
        (ctx) =>
          ctx.step(
            "shelf",
            () => {
              throw failure("out_of_stock", "no pens");
            },
            { retry: { maxAttempts: 1 } },
          ),
      );
      return "picked";
    } catch (err) {
      return { a, b, pick: `${classOf(err)}: ${(err as Error).message}` };
    }
  });
  await whileServing(worker(wf), async () => {
    const r = await ended(await start("both-ts"));
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    const out = r.output as { a: number; b: string; pick: string };
    assert.equal(out.a, 1);
    assert.match(out.b, /^two:[0-9a-f-]{36}$/);
    assert.equal(out.pick, "out_of_stock: pick item 1: no pens");
    assert.deepEqual(
      (main(r).operations ?? []).map((op) => `${op.id} ${op.kind} ${op.status}`).sort(),
      ["/both#0/0/a#0 step completed", "/both#0/1/b#0 step completed", "/both#0/1/uuid#0 value completed", "/pick#0/0/ok#0 step completed", "/pick#0/1/shelf#0 step failed"],
    );
  });
});

test("a function continues as new three times: fresh runs with the new inputs and empty histories, linked both ways", async () => {
  let adds = 0;
  const wf = defineFunction({ name: "counter-ts", version: "1" }, async (ctx, input: { n: number; total: number }) => {
    const n = await ctx.step("add", () => {
      adds++;
      return input.n + 1;
    });
    if (input.n === 0) await ctx.sleep("nap", 2500); // the first run continues from a replay
    if (input.n < 3) return ctx.continueAsNew({ n, total: input.total + n });
    return input;
  });
  await whileServing(worker(wf), async () => {
    const first = (await srv.client.start("counter-ts", { input: { n: 0, total: 0 } })).run.id;
    // wait follows continued_as to the last run; continued_from leads back.
    const chain = [await ended(first)];
    while (chain[0]!.continued_from) chain.unshift(await srv.client.get(chain[0]!.continued_from));
    assert.equal(chain.length, 4);
    assert.equal(chain[0]!.id, first);
    for (const [i, r] of chain.entries()) {
      assert.equal(r.status, "completed", JSON.stringify(r.error));
      assert.deepEqual(r.input, { n: i, total: (i * (i + 1)) / 2 });
      assert.equal(r.continued_from, i === 0 ? undefined : chain[i - 1]!.id);
      if (i < 3) assert.deepEqual(r.output, { continued_as: chain[i + 1]!.id });
      const ops = (main(r).operations ?? []).map((op) => `${op.id} ${op.kind} ${JSON.stringify(op.result)}`);
      assert.deepEqual(ops, i === 0 ? ["/add#0 step 1", "/nap#0 sleep undefined"] : [`/add#0 step ${i + 1}`], `run ${i}'s history is its own`);
    }
    assert.deepEqual(chain[3]!.output, { n: 3, total: 6 });
    assert.equal(adds, 4, "each run's step ran once");
  });
});

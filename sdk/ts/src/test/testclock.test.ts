// A test server whose clock the test moves ("@cairn-dev/cairn/testing"):
// an hour's sleep step and a day's function sleep pass in milliseconds,
// each at the move that reaches it, not before; the function's sleep is
// measured on the server's clock (it starts after the clock was moved, so
// a sleep on this process's clock would come due an hour early). A server
// without a test clock refuses a move with a 404.
import assert from "node:assert/strict";
import { test } from "node:test";

import { APIError, type Client, defineFunction, defineWorkflow, type Run, Worker } from "../index.js";
import { startTestServer } from "../testing.js";
import { eventually, main, suspended } from "./durable.js";
import { memLogger, whileServing } from "./server.js";

const HOUR = 60 * 60_000;

async function step(c: Client, run: string, id: string): Promise<Run["steps"][number]> {
  const s = (await c.get(run)).steps.find((x) => x.id === id);
  assert.ok(s, `step ${id}`);
  return s;
}

test("a test moves the server's clock: hours pass in milliseconds", async () => {
  const srv = await startTestServer({ args: ["--reap-every", "1h"] }); // only the moves reap
  try {
    const c = srv.client;
    const nap = defineWorkflow({ name: "nap-ts", version: "1" })
      .task("a", () => ({}))
      .sleep("s", "1h", { after: ["a"] })
      .task("b", () => "awake", { after: ["s"] });
    const fn = defineFunction({ name: "fnap-ts", version: "1" }, async (ctx) => {
      await ctx.sleep("nap", "24h");
      return "rested";
    });
    const began = Date.now();
    await whileServing(new Worker(c, { logger: memLogger(), claimWaitMs: 1000 }).register(nap, fn), async () => {
      const { run } = await c.start("nap-ts");
      await eventually("the sleep step to begin", 15_000, async () => (await step(c, run.id, "s")).status === "sleeping");
      await srv.clock.advance(HOUR - 60_000);
      assert.equal((await step(c, run.id, "s")).status, "sleeping", "the hour's sleep ended a minute early");
      const moved = await srv.clock.advance(60_000);
      assert.equal(moved.offset_ms, HOUR);
      const done = await c.wait(run.id, { signal: AbortSignal.timeout(20_000) });
      assert.equal(done.status, "completed", JSON.stringify(done.error));

      const f = (await c.start("fnap-ts")).run;
      await suspended(c, f.id);
      await srv.clock.advance(24 * HOUR - 60_000);
      assert.equal((await c.get(f.id)).status, "running", "the day's sleep ended a minute early (measured on this process's clock?)");
      await srv.clock.advance(60_000);
      const fdone = await c.wait(f.id, { signal: AbortSignal.timeout(20_000) });
      assert.equal(fdone.status, "completed", JSON.stringify(fdone.error));
      assert.equal(fdone.output, "rested");
      const wake = Date.parse(main(fdone).operations![0]!.wake_at!);
      assert.ok(wake >= (await srv.clock.now()).getTime() - 60_000 - 5_000, "the wake time is on the server's clock");
    });
    assert.ok(Date.now() - began < 60_000, `a day and an hour took ${Date.now() - began} ms`);
  } finally {
    await srv.stop();
  }
});

test("a server without a test clock refuses to move it", async () => {
  const srv = await startTestServer({ testClock: false });
  try {
    await assert.rejects(srv.clock.advance(HOUR), (e: unknown) => e instanceof APIError && e.status === 404);
  } finally {
    await srv.stop();
  }
});

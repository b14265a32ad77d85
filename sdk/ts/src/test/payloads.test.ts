import assert from "node:assert/strict";
import { test } from "node:test";

import { asPayloadRef, defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile } from "./server.js";

const srv = serverForFile();

const big = (n: number, size: number) => ({ n, pad: "q".repeat(size) });

// Values larger than the server's inline limit (64 KiB) travel by
// reference: a 100 KB start input reaches the body resolved, three
// 1.6 MB outputs reach a join through its template and ctx.output, and
// the run the client returns holds every value (the server resolves only
// 4 MiB of them per read: the client fetched the rest).
test("large values by reference are resolved for bodies and readers", async () => {
  const wf = defineWorkflow({ name: "big-ts", version: "1" })
    .task("a", async (_ctx, input: { n: number; pad: string }) => {
      assert.equal(input.pad.length, 100_000);
      return big(1, 1_600_000);
    })
    .task("b", async () => big(2, 1_600_000), { after: ["a"] })
    .task("c", async () => big(3, 1_600_000), { after: ["a"] })
    .task(
      "join",
      async (ctx, input: { ns: number[] }) => {
        const a = ctx.output<{ n: number; pad: string }>("a");
        const c = ctx.outputs()["c"] as { pad: string };
        return { ns: input.ns, a: a?.n, lens: [a?.pad.length, c.pad.length] };
      },
      { after: ["b", "c"], input: { ns: ["${steps.a.output.n}", "${steps.b.output.n}", "${steps.c.output.n}"] } },
    );
  const w = new Worker(srv.client, { logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  const done = w.serve();
  await Promise.race([w.ready, done]);
  try {
    const { run } = await srv.client.start("big-ts", { input: big(0, 100_000) });
    const r = await srv.client.wait(run.id);
    assert.equal(r.status, "completed", JSON.stringify(r.error));
    assert.deepEqual(r.output, { ns: [1, 2, 3], a: 1, lens: [1_600_000, 1_600_000] });
    for (const s of r.steps) {
      assert.equal(asPayloadRef(s.output), undefined, `step ${s.id} is still a reference`);
    }
    assert.equal((r.input as { pad: string }).pad.length, 100_000);
    assert.deepEqual(
      r.steps.filter((s) => s.id !== "join").map((s) => (s.output as { n: number }).n),
      [1, 2, 3],
    );
  } finally {
    w.stop();
    await done;
  }
});

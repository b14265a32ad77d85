// Debounce and batch on event triggers against a real cairn dev.
import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

// runInputs waits until each workflow has one run and returns their inputs.
async function runInputs(workflows: string[]): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const out: Record<string, unknown> = {};
    for (const wf of workflows) {
      const page = await srv.client.list({ workflow: wf });
      const run = page.runs.length === 1 ? page.runs[0] : undefined;
      if (run) out[wf] = (await srv.client.get(run.id)).input;
    }
    if (Object.keys(out).length === workflows.length) return out;
    if (Date.now() > deadline) throw new Error(`no single run of each of ${workflows.join(", ")} within 30s: ${JSON.stringify(out)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("debounce and batch: publishes join windows; one run with the last payload, one with the list", async () => {
  const hold = async (ctx: { signal: AbortSignal }) => {
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    return 0;
  };
  const quiet = defineWorkflow({ name: "quiet-ts", version: "1", debounce: { key: "event.payload.doc", period: "1s" } })
    .on("typed-ts")
    .task("hold", hold);
  const bulk = defineWorkflow({ name: "bulk-ts", version: "1", batch: { maxSize: 3, timeout: "1s" } })
    .on("typed-ts")
    .task("hold", hold);
  await whileServing(new Worker(srv.client, { logger: memLogger() }).register(quiet, bulk), async () => {
    for (let n = 0; n < 3; n++) {
      const res = await srv.client.publish("typed-ts", { doc: 1, n }, { id: `ts${n}` });
      assert.equal(res.runs.length, 2);
      assert.ok(res.runs.every((r) => r.window && !r.run));
    }
    const inputs = await runInputs(["quiet-ts", "bulk-ts"]);
    assert.deepEqual(inputs["quiet-ts"], { doc: 1, n: 2 });
    assert.deepEqual(inputs["bulk-ts"], [0, 1, 2].map((n) => ({ doc: 1, n })));
    for (const wf of ["quiet-ts", "bulk-ts"]) {
      for (const r of (await srv.client.list({ workflow: wf })).runs) await srv.client.cancel(r.id, "test over");
    }
  });
});

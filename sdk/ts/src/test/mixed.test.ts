// A mixed fleet: a Go worker (test/goworker, built by make ts-test into
// $CAIRN_GO_WORKER) serves step a, this TypeScript worker serves step b,
// of one run.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";

import { defineWorkflow, failure, Worker } from "../index.js";
import { memLogger, serverForFile } from "./server.js";

const srv = serverForFile();

test("a Go worker and a TypeScript worker serve different steps of one run", async () => {
  const bin = process.env.CAIRN_GO_WORKER;
  assert.ok(bin, "CAIRN_GO_WORKER is not set: run the tests with make ts-test");
  const go = spawn(bin, [], { env: { ...process.env, CAIRN_SERVER: srv.url }, stdio: ["ignore", "pipe", process.env.CAIRN_DEBUG ? "inherit" : "ignore"] });
  const exited = once(go, "exit");
  try {
    // The Go worker says "ready" once registered.
    await new Promise<void>((resolve, reject) => {
      go.stdout.on("data", (b: Buffer) => b.toString().includes("ready") && resolve());
      go.once("exit", (code) => reject(new Error(`go worker exited ${code}`)));
    });
    // The same definition as the Go worker's; a refuses here (unservable)
    // the way the Go worker refuses b.
    const wf = defineWorkflow({ name: "mixed", version: "1" })
      .task("a", async () => {
        throw failure("unservable", "step a is served by the Go worker");
      })
      .task("b", async (ctx, input: { by: string; n: number }) => ({ from: input, by: "ts", worker: ctx.info.worker }), {
        after: ["a"],
        input: "${steps.a.output}",
      });
    const w = new Worker(srv.client, { name: "ts-worker", logger: memLogger(), claimWaitMs: 1000 }).register(wf);
    const serve = w.serve();
    await Promise.race([w.ready, serve]);
    try {
      const { run } = await srv.client.start("mixed", { input: { n: 21 } });
      const done = await srv.client.wait(run.id);
      assert.equal(done.status, "completed", JSON.stringify(done.error));
      assert.deepEqual(done.output, { from: { by: "go", n: 42 }, by: "ts", worker: "ts-worker" });
      const completedBy = (id: string) => done.steps.find((s) => s.id === id)?.attempts?.find((a) => a.outcome === "completed")?.worker;
      assert.equal(completedBy("a"), "go-worker");
      assert.equal(completedBy("b"), "ts-worker");
    } finally {
      w.stop();
      await serve;
    }
  } finally {
    go.kill("SIGTERM");
    await exited;
  }
});

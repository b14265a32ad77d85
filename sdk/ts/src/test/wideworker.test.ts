// A worker with more slots than one claim may ask for (100) claims in
// several and runs its work: its claims used to ask for every free slot,
// which the server refuses (422), so a worker of 101 slots ran nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, startServer, type DevServer } from "./server.js";

let srv: DevServer;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv.stop();
});

test("a worker with 150 slots runs its work", async () => {
  const wf = defineWorkflow({ name: "wide", version: "1" }).task("a", async () => 1);
  const w = new Worker(srv.client, { concurrency: 150, logger: memLogger() }).register(wf);
  const done = w.serve();
  try {
    await Promise.race([w.ready, done]);
    const runs = await Promise.all([1, 2, 3].map(() => srv.client.start("wide", {})));
    for (const { run } of runs) {
      const got = await srv.client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
      assert.equal(got.status, "completed");
    }
  } finally {
    w.stop();
    await done;
  }
});

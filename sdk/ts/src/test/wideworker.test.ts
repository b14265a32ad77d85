// A worker with more slots than one claim may ask for (100) runs its
// work, and when idle holds a claim per 100 slots (100, 100 and 50), so a
// burst of starts is handed to its slots inside the starts' creates. Its
// claims asked for every free slot, which the server refuses (422), so a
// worker of 101 slots ran nothing; then it held one claim of 100, and the
// rest of a burst waited as backlog, each paying a lease write.
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

test("a worker with 250 slots holds a claim per 100 slots and runs its work", async () => {
  const wf = defineWorkflow({ name: "wide", version: "1" }).task("a", async () => 1);
  const w = new Worker(srv.client, { concurrency: 250, logger: memLogger() }).register(wf);
  const done = w.serve();
  try {
    await Promise.race([w.ready, done]);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const held = ((await (await fetch(`${srv.url}/v1/api/healthz`)).json()) as { held_claims: number }).held_claims;
      if (held >= 3) break;
      assert.ok(Date.now() < deadline, `an idle worker of 250 slots: the server holds ${held} of its claims after 10 s, not 3`);
      await new Promise((r) => setTimeout(r, 20));
    }
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

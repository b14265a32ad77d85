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

// An idle worker of 250 slots holds three claims (100, 100 and 50): with
// one claim of at most 100 held, the rest of a burst of starts waited as
// backlog, each paying a lease write, instead of being handed over in
// its start.
test("an idle worker with 250 slots holds a claim per 100 slots", async () => {
  const wf = defineWorkflow({ name: "wider", version: "1" }).task("a", async () => 1);
  const w = new Worker(srv.client, { concurrency: 250, logger: memLogger() }).register(wf);
  const done = w.serve();
  try {
    await Promise.race([w.ready, done]);
    const deadline = Date.now() + 10_000;
    let held = 0;
    while (held < 3) {
      held = ((await (await fetch(`${srv.url}/v1/api/healthz`)).json()) as { held_claims: number }).held_claims;
      if (held >= 3) break;
      assert.ok(Date.now() < deadline, `an idle worker of 250 slots: the server holds ${held} of its claims after 10 s, not 3`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    w.stop();
    await done;
  }
});

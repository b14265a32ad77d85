// An idle worker against a server that holds claims briefly and asks for a
// pause between empty ones (CAIRN_CLAIM_HOLD, CAIRN_CLAIM_PAUSE: Lambda's
// defaults, shortened) sends a few claims, not one per hold, and still
// picks up work that becomes ready while it pauses.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Client, defineWorkflow, Worker } from "../index.js";
import { memLogger, startServer, type DevServer } from "./server.js";

const holdMs = 200;
const pauseMs = 1500;
const idleMs = 4000;

let paused: DevServer;
let control: DevServer;
before(async () => {
  [paused, control] = await Promise.all([
    startServer({ CAIRN_CLAIM_HOLD: `${holdMs}ms`, CAIRN_CLAIM_PAUSE: `${pauseMs}ms` }),
    startServer({ CAIRN_CLAIM_HOLD: `${holdMs}ms` }),
  ]);
});
after(async () => {
  await Promise.all([paused.stop(), control.stop()]);
});

/** Serves one workflow on a worker whose claims are counted; idles idleMs. */
async function idleWorker(srv: DevServer, name: string) {
  let claims = 0;
  const counting: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith("/steps/claim")) claims++;
    return fetch(input, init);
  };
  const wf = defineWorkflow({ name, version: "1" }).task("a", async () => 1);
  const w = new Worker(new Client({ server: srv.url, fetch: counting }), { concurrency: 1, logger: memLogger() }).register(wf);
  const done = w.serve();
  await Promise.race([w.ready, done]);
  await new Promise((r) => setTimeout(r, idleMs));
  return {
    claims: () => claims,
    async stop() {
      w.stop();
      await done;
    },
  };
}

test("an idle worker waits the server's pause_ms between empty claims, and still picks up work", async () => {
  const w = await idleWorker(paused, "paused");
  try {
    const n = w.claims();
    // Pauses start at 1 s and double to 1.5 s, each half to all of it.
    assert.ok(n >= 2 && n <= 5, `${n} claims in ${idleMs} ms idle with a ${holdMs} ms hold and a ${pauseMs} ms pause; want 2 to 5`);
    const began = Date.now();
    const { run } = await paused.client.start("paused", {});
    const got = await paused.client.wait(run.id, { signal: AbortSignal.timeout(10_000) });
    assert.equal(got.status, "completed");
    const took = Date.now() - began;
    assert.ok(took <= pauseMs + holdMs + 1000, `run took ${took} ms; want at most the pause + the hold (+1 s)`);
  } finally {
    await w.stop();
  }
});

test("without a pause the same worker claims again at once (the control)", async () => {
  const w = await idleWorker(control, "control");
  try {
    assert.ok(w.claims() >= 10, `${w.claims()} claims in ${idleMs} ms idle with a ${holdMs} ms hold and no pause; want about one per hold`);
  } finally {
    await w.stop();
  }
});

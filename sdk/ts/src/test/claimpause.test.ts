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
  const claims: number[] = []; // when each claim was sent (ms)
  const completes: number[] = [];
  const counting: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (url.endsWith("/steps/claim")) claims.push(Date.now());
    if (url.endsWith("/complete")) completes.push(Date.now());
    return fetch(input, init);
  };
  const wf = defineWorkflow({ name, version: "1" }).task("a", async () => 1);
  const w = new Worker(new Client({ server: srv.url, fetch: counting }), { concurrency: 1, logger: memLogger() }).register(wf);
  const done = w.serve();
  await Promise.race([w.ready, done]);
  await new Promise((r) => setTimeout(r, idleMs));
  return {
    claims: () => claims.length,
    /** Claims sent after `since` and before the first complete, as ms after `since`. */
    claimsBeforeComplete(since: number) {
      assert.equal(completes.length, 1, `${completes.length} completes sent, want 1`);
      const done = completes[0] ?? Infinity;
      return claims.filter((at) => at > since && at < done).map((at) => at - since);
    },
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
    // Picked up by the worker's next claim (or the one held as the run
    // starts): at most one claim between the start and the step's
    // complete, sent within the pause. Measured from the calls the worker
    // sends, so the time the machine takes to run the step is not counted
    // against the pause.
    const between = w.claimsBeforeComplete(began);
    assert.ok(
      between.length <= 1 && ((between[0] ?? 0) <= pauseMs + 500),
      `claims sent between the start and the step's complete at ${JSON.stringify(between)} ms; want at most one, within the pause ${pauseMs} ms (+0.5 s)`,
    );
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

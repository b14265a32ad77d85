// A lease id carries the lease's secret nonce: whoever reads it may
// complete the lease with a worker key. The worker's log lines name a
// step by run, step and attempt, never by lease id, on every level, the
// warning of a complete it retries included.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Client, defineWorkflow, Worker } from "../index.js";
import { memLogger, startServer, whileServing, type DevServer } from "./server.js";

let srv: DevServer;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv.stop();
});

/** Every string a log record carries, errors and their causes included. */
function text(v: unknown, depth = 0): string {
  if (depth > 4 || v === undefined || v === null) return "";
  if (v instanceof Error) return `${v.name}: ${v.message} ${v.stack ?? ""} ${text((v as { cause?: unknown }).cause, depth + 1)}`;
  if (typeof v === "object") return Object.values(v as Record<string, unknown>).map((x) => text(x, depth + 1)).join(" ");
  return String(v);
}

test("no log line carries a lease id", async () => {
  const leases = new Set<string>();
  let broke = false;
  const recording: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const m = /\/steps\/([^/]+)\/(complete|fail|heartbeat|started|checkpoint)$/.exec(new URL(url).pathname);
    if (m) {
      leases.add(m[1] ?? "");
      if (m[2] === "complete" && !broke) {
        broke = true; // the first complete breaks off: retried
        throw new TypeError("fetch failed (simulated: connection reset)");
      }
    }
    return fetch(input, init);
  };
  const logger = memLogger();
  const wf = defineWorkflow({ name: "leaselog-ts", version: "1" })
    .task("a", async () => 1)
    .task("b", async () => 2, { after: ["a"] });
  const w = new Worker(new Client({ server: srv.url, fetch: recording }), { logger, claimWaitMs: 1000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("leaselog-ts", {});
    const got = await srv.client.wait(run.id, { signal: AbortSignal.timeout(20_000) });
    assert.equal(got.status, "completed");
  });
  assert.ok(broke && leases.size >= 2, `saw ${leases.size} leases`);
  assert.ok(logger.records.length > 0, "no log records");
  for (const r of logger.records) {
    const line = `${r.level} ${r.msg} ${text(r.attrs)}`;
    for (const l of leases) assert.ok(!line.includes(l), `a log line carries a lease id: ${line}`);
  }
});

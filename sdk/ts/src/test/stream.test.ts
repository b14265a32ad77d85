import assert from "node:assert/strict";
import { test } from "node:test";

import { defineWorkflow, Worker } from "../index.js";
import { memLogger, serverForFile, whileServing } from "./server.js";

const srv = serverForFile();

test("a TypeScript step's progress reaches a TypeScript client's stream, in order, then the run's end", async () => {
  const n = 200; // over the lease's burst: the later ones wait as the server asks
  let begin!: () => void;
  const begun = new Promise<void>((r) => (begin = r));
  const wf = defineWorkflow({ name: "progress-ts", version: "1" }).task("send", async (ctx) => {
    await begun;
    for (let i = 0; i < n; i++) await ctx.progress({ i, of: n });
    return "sent";
  });
  const w = new Worker(srv.client, { name: "ts-progress", logger: memLogger(), claimWaitMs: 2000 }).register(wf);
  await whileServing(w, async () => {
    const { run } = await srv.client.start("progress-ts");
    const got: number[] = [];
    const kinds = new Set<string>();
    const signal = AbortSignal.timeout(60_000);
    let last: string | undefined;
    for await (const ev of srv.client.stream(run.id, { signal })) {
      kinds.add(ev.kind);
      if (ev.kind === "status") begin();
      if (ev.kind === "progress") {
        const v = ev.progress.value as { i: number };
        assert.equal(v.i, got.length, "progress in order, none missed");
        assert.equal(ev.progress.step, "send");
        got.push(v.i);
      }
      if (ev.kind === "end") last = ev.status.status;
    }
    assert.equal(got.length, n);
    assert.equal(last, "completed");
    assert.ok(kinds.has("journal"), "journal entries were streamed");
  });
});

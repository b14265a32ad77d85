// Progress across two API instances sharing a bucket and a NATS bus: a Go
// step (test/progressfleet, built by make ts-test into
// $CAIRN_PROGRESS_FLEET) and a TypeScript step on instance A each publish
// 1,000 progress messages, and a TypeScript and a Go client on instance B
// follow both runs: every message arrives, in order, at all four, and the
// delivery latency of each pair is reported (p50/p99). The steps wait for
// an event the test sends once all four streams are open: progress is
// live, never replayed.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { type Client, defineWorkflow, Worker } from "../index.js";
import { startTestServer, type TestServer } from "../testing.js";
import { memLogger, whileServing } from "./server.js";

const N = 1000;
const nowMs = () => performance.timeOrigin + performance.now();

/** Starts the Go helper with args; resolves with the process once a stdout line starts with want, and that line. */
async function helper(args: string[], env: Record<string, string>, want: string): Promise<{ proc: ChildProcess; line: string; lines: string[] }> {
  const bin = process.env.CAIRN_PROGRESS_FLEET;
  assert.ok(bin, "CAIRN_PROGRESS_FLEET is not set: run the tests with make ts-test");
  const proc = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const lines: string[] = [];
  let buf = "";
  const line = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`progressfleet ${args[0]} did not say ${want} within 20 s`)), 20_000);
    proc.stdout!.on("data", (b: Buffer) => {
      buf += b.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
        const l = lines[lines.length - 1]!;
        if (l.startsWith(want)) (clearTimeout(t), resolve(l));
      }
    });
    proc.once("exit", (code) => (clearTimeout(t), reject(new Error(`progressfleet ${args[0]} exited ${code}`))));
  });
  return { proc, line, lines };
}

interface Stats {
  count: number;
  in_order: boolean;
  p50_ms?: number;
  p99_ms?: number;
}

/** Follows run on c, calling opened at its first event, timing each progress mark. */
async function follow(c: Client, run: string, opened: () => void): Promise<Stats> {
  const lat: number[] = [];
  let inOrder = true;
  let first = true;
  for await (const ev of c.stream(run, { signal: AbortSignal.timeout(110_000) })) {
    if (first) (first = false), opened();
    if (ev.kind !== "progress") continue;
    const m = ev.progress.value as { i: number; sent_ms: number };
    inOrder &&= m.i === lat.length && !ev.progress.missed;
    lat.push(nowMs() - m.sent_ms);
  }
  lat.sort((a, b) => a - b);
  return { count: lat.length, in_order: inOrder && lat.length === N, p50_ms: lat[lat.length >> 1], p99_ms: lat[Math.floor((lat.length * 99) / 100)] };
}

test("progress crosses two instances over NATS: Go and TypeScript steps to TypeScript and Go clients", { timeout: 115_000 }, async () => {
  const nats = await helper(["nats"], {}, "nats ");
  const dir = mkdtempSync(join(tmpdir(), "cairn-fleet-"));
  const env = { CAIRN_NOTIFY: nats.line.slice(5) };
  const servers: TestServer[] = [];
  const procs: ChildProcess[] = [nats.proc];
  try {
    for (const _ of [0, 1]) servers.push(await startTestServer({ dir, env, testClock: false }));
    const [a, b] = [servers[0]!, servers[1]!];
    procs.push((await helper(["worker"], { CAIRN_SERVER: a.url }, "ready")).proc);
    const ts = defineWorkflow({ name: "progress-ts", version: "1" })
      .wait("go", "go")
      .task(
        "send",
        async (ctx) => {
          for (let i = 0; i < N; i++) await ctx.progress({ i, sent_ms: nowMs() });
          return "sent";
        },
        { after: ["go"] },
      );
    await whileServing(new Worker(a.client, { logger: memLogger(), claimWaitMs: 1000 }).register(ts), async () => {
      const runs = { go: (await b.client.start("progress-go", { input: { n: N } })).run.id, ts: (await b.client.start("progress-ts")).run.id };
      const opens: Promise<void>[] = [];
      const tsStats: Record<string, Promise<Stats>> = {};
      const goWatch: Record<string, Promise<{ proc: ChildProcess; line: string; lines: string[] }>> = {};
      for (const [step, run] of Object.entries(runs)) {
        let opened!: () => void;
        opens.push(new Promise<void>((r) => (opened = r)));
        tsStats[step] = follow(b.client, run, opened);
        goWatch[step] = helper(["watch", run, String(N)], { CAIRN_SERVER: b.url }, "open");
        opens.push(goWatch[step]!.then((h) => void procs.push(h.proc)));
      }
      await Promise.all(opens);
      for (const run of Object.values(runs)) await b.client.sendEvent(run, { name: "go" });
      for (const [step, run] of Object.entries(runs)) {
        const got = await tsStats[step]!;
        const h = await goWatch[step]!;
        await new Promise<void>((r) => (h.proc.exitCode !== null ? r() : h.proc.once("exit", () => r())));
        const goStats = JSON.parse(h.lines.find((l) => l.startsWith("{"))!) as Stats;
        for (const [client, s] of [["TypeScript", got], ["Go", goStats]] as const) {
          assert.equal(s.count, N, `${step} step to the ${client} client: ${s.count} of ${N} progress messages`);
          assert.ok(s.in_order, `${step} step to the ${client} client: out of order or missed`);
          console.log(`progress ${step === "go" ? "Go" : "TypeScript"} step → ${client} client across two instances over NATS: ${N} messages, p50 ${s.p50_ms!.toFixed(2)} ms, p99 ${s.p99_ms!.toFixed(2)} ms`);
        }
        assert.equal((await b.client.get(run)).status, "completed");
      }
    });
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill("SIGTERM");
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

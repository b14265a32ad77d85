// The chaos suite's TypeScript worker: the TypeScript SDK serving the
// chaos workflows with the same definitions as the Go chaosworker
// (chaos/workflows.go: the engine compares them byte for byte, so both
// fleets serve every step), logging each body's execution to the
// execution log and each worker call to the call history in the Go
// worker's formats (chaos/workflows.go Exec, chaos/history.go Call). The
// suite compiles it with tsc against sdk/ts and runs it with node,
// killing and pausing it like the Go workers. Environment: CHAOS_SERVER,
// CHAOS_WORKER (its name), CHAOS_EXECLOG, CHAOS_HISTORY.
import { randomBytes } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, defineWorkflow, retryable, Worker, type Logger, type StepContext, type WorkflowDef } from "@cairn-dev/cairn";

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) {
    process.stderr.write(`chaos ts worker: ${name} is not set\n`);
    process.exit(2);
  }
  return v;
};
const server = env("CHAOS_SERVER");
const name = env("CHAOS_WORKER");
// O_APPEND: each line is one write(2) below PIPE_BUF, so lines of many
// processes never interleave and a kill -9 loses nothing written.
const execFd = openSync(env("CHAOS_EXECLOG"), "a");
const histFd = openSync(env("CHAOS_HISTORY"), "a");

// Wall-clock nanoseconds (the checker compares them with the Go
// processes' time.Now().UnixNano()), kept as a bigint: they exceed 2^53.
const wall0 = BigInt(Date.now()) * 1_000_000n;
const mono0 = process.hrtime.bigint();
const nowNs = (): bigint => wall0 + (process.hrtime.bigint() - mono0);

// ---- the call history (chaos/history.go) ----

let seq = 0;
// jsonOrUndefined is a body as one line of JSON (the server ends its
// answers with a newline), or undefined when it is no JSON.
const jsonOrUndefined = (s: string): string | undefined => {
  if (s.trim() === "") return undefined;
  try {
    return JSON.stringify(JSON.parse(s));
  } catch {
    return undefined;
  }
};

interface CallLine {
  seq: number;
  pending?: boolean;
  path: string;
  req?: string; // raw JSON
  status: number;
  resp?: string; // raw JSON
  start: bigint;
  end: bigint;
}

function writeCall(c: CallLine): void {
  // Built by hand: req and resp are raw JSON, start and end bigints.
  let s = `{"worker":${JSON.stringify(name)},"seq":${c.seq}`;
  if (c.pending) s += `,"pending":true`;
  s += `,"path":${JSON.stringify(c.path)}`;
  if (c.req !== undefined) s += `,"req":${c.req}`;
  s += `,"status":${c.status}`;
  if (c.resp !== undefined) s += `,"resp":${c.resp}`;
  s += `,"start":${c.start},"end":${c.end}}\n`;
  writeSync(histFd, s);
}

// recordingFetch writes every POST to /steps/… twice: its invocation
// before the request leaves (a kill -9 before the answer leaves this line
// alone: the checker takes the call as unanswered), then its answer.
const recordingFetch: typeof fetch = async (input, init) => {
  const req = input instanceof Request ? input : new Request(input, init);
  const path = new URL(req.url).pathname;
  const i = path.indexOf("/steps/");
  if (i < 0 || req.method !== "POST") return fetch(req);
  const c: CallLine = { seq: ++seq, path: path.slice(i), status: 0, start: 0n, end: 0n };
  c.req = jsonOrUndefined(await req.clone().text());
  c.start = nowNs();
  writeCall({ ...c, pending: true });
  let res: Response;
  try {
    res = await fetch(req);
  } catch (err) {
    c.end = nowNs();
    writeCall(c);
    throw err;
  }
  let body: string;
  try {
    body = await res.text();
  } catch (err) {
    c.end = nowNs();
    writeCall(c);
    throw err;
  }
  c.end = nowNs();
  c.status = res.status;
  c.resp = jsonOrUndefined(body);
  writeCall(c);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};

// ---- the workflows (chaos/workflows.go) ----

interface Input {
  work_ms?: number;
  slow_ms?: number;
}

type Fail = (ctx: StepContext) => Error | undefined;

function body(fail?: Fail) {
  return async (ctx: StepContext, input: Input) => {
    const info = ctx.info;
    const nonce = randomBytes(8).toString("hex");
    let work = input.work_ms && input.work_ms > 0 ? Math.floor(Math.random() * input.work_ms) : 0;
    if (info.workflow === "chaos-slow" && input.slow_ms && input.slow_ms > 0) work = input.slow_ms;
    await sleep(work, undefined, { signal: ctx.signal });
    const ferr = fail?.(ctx);
    const e = {
      run: info.run,
      workflow: info.workflow,
      step: info.step,
      attempt: info.attempt,
      lease: info.lease,
      worker: name,
      delivery: info.delivery,
      nonce,
      ...(ferr ? { failed: true } : {}),
    };
    writeSync(execFd, JSON.stringify(e) + "\n");
    if (ferr) throw ferr;
    return { nonce };
  };
}

const FANOUT_WIDTH = 8;
const input = { input: { work_ms: "${input.work_ms}" } };

function defs(): WorkflowDef[] {
  const linear = defineWorkflow({ name: "chaos-linear", version: "1" })
    .task("a", body(), input)
    .task("b", body(), { ...input, after: ["a"] })
    .task("c", body(), { ...input, after: ["b"] });
  const fan = defineWorkflow({ name: "chaos-fanout", version: "1" }).task("split", body(), input);
  const branches: string[] = [];
  for (let i = 0; i < FANOUT_WIDTH; i++) {
    branches.push(`p${i}`);
    fan.task(`p${i}`, body(), { ...input, after: ["split"] });
  }
  fan.task("join", body(), { ...input, after: branches });
  const amo = defineWorkflow({ name: "chaos-amo", version: "1" })
    .task("prep", body(), input)
    .task("once", body(), { ...input, after: ["prep"], atMostOnce: true })
    .task("after", body(), { ...input, after: ["once"] });
  const wait = defineWorkflow({ name: "chaos-wait", version: "1" })
    .task("t1", body(), input)
    .wait("w", "go", { after: ["t1"] })
    .task("t2", body(), { ...input, after: ["w"] });
  const sleepWf = defineWorkflow({ name: "chaos-sleep", version: "1" })
    .task("t1", body(), input)
    .sleep("s", 300, { after: ["t1"] })
    .task("t2", body(), { ...input, after: ["s"] });
  const flaky = defineWorkflow({ name: "chaos-flaky", version: "1" })
    .task(
      "flaky",
      body((ctx) => (ctx.info.attempt <= 2 ? retryable("chaos: planned failure") : undefined)),
      { ...input, retry: { maxAttempts: 8, initialBackoff: 50, maxBackoff: 500, multiplier: 2 } },
    )
    .task("after", body(), { ...input, after: ["flaky"] });
  const slow = defineWorkflow({ name: "chaos-slow", version: "1" })
    .task("slow", body(), { input: { slow_ms: "${input.slow_ms}" } })
    .task("after", body(), { ...input, after: ["slow"] });
  return [linear, fan, amo, wait, sleepWf, flaky, slow];
}

// ---- the process ----

// Warnings and errors to stderr (the driver's log file), like the Go
// worker's slog at WARN.
const log: Logger = {
  debug: () => {},
  info: () => {},
  warn: (msg, attrs) => process.stderr.write(`WARN ${msg} ${safe(attrs)}\n`),
  error: (msg, attrs) => process.stderr.write(`ERROR ${msg} ${safe(attrs)}\n`),
};
function safe(attrs: unknown): string {
  try {
    return JSON.stringify(attrs, (_k, v) => (v instanceof Error ? String(v) : typeof v === "bigint" ? String(v) : v)) ?? "";
  } catch {
    return String(attrs);
  }
}

const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());
process.once("SIGINT", () => stop.abort());

const client = new Client({ server, fetch: recordingFetch });
const worker = new Worker(client, { name, concurrency: 8, logger: log, claimWaitMs: 2000, drainTimeoutMs: 5000 }).register(...defs());
while (!stop.signal.aborted) {
  try {
    await worker.serve({ signal: stop.signal });
  } catch (err) {
    // The API instance may be down (killed by the driver): try again.
    log.warn("serve ended; retrying", { err });
  }
  if (!stop.signal.aborted) await sleep(200).catch(() => {});
}
closeSync(execFd);
closeSync(histFd);

// Test helpers: a real `cairn dev` on a free 127.0.0.1 port and a
// temporary directory, whose clock the test moves — a sleep of an hour
// passes in milliseconds.
//
//   import { startTestServer } from "@cairn-dev/cairn/testing";
//   const srv = await startTestServer();
//   … start a run that sleeps an hour …
//   await srv.clock.advance(60 * 60_000); // the sleep has fired
//   await srv.stop();
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client, type TestClock } from "./client.js";

export interface TestServerOptions {
  /** The cairn binary [$CAIRN_BIN, else `cairn` on the PATH]. */
  bin?: string;
  /** Variables added to the server's environment (CAIRN_CLAIM_HOLD=…). */
  env?: Record<string, string>;
  /** Extra `cairn dev` flags. The defaults: --lease-ttl 1500ms --reap-every 200ms. */
  args?: string[];
  /** A clock the test moves [true]; false measures real time only. */
  testClock?: boolean;
  /** How long to wait for the server to answer [20 s]. */
  readyTimeoutMs?: number;
  /**
   * The directory of its store [a new temporary one, removed at stop]. Two
   * servers given one directory (and one bus, CAIRN_NOTIFY in env) are two
   * instances of one deployment; a given directory is kept.
   */
  dir?: string;
}

export interface TestServer {
  url: string;
  client: Client;
  /** The directory the server keeps its bucket (a file store) in. */
  dir: string;
  clock: {
    /** The server's time. */
    now(): Promise<Date>;
    /**
     * Moves the server's clock ms forward and runs a reaper pass: what came
     * due by the new time (sleeps, wait timeouts, retry backoffs,
     * deadlines, schedule ticks) has fired when it resolves. Leases are
     * measured on this clock too: move it while the run waits, not while a
     * step runs longer than its lease. It never goes back.
     */
    advance(ms: number): Promise<TestClock>;
  };
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

/** Starts `cairn dev` for a test (see TestServerOptions); stop it after. */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const bin = opts.bin ?? process.env.CAIRN_BIN ?? "cairn";
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "cairn-test-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ["dev", "--addr", `127.0.0.1:${port}`, "--dir", dir, "--lease-ttl", "1500ms", "--reap-every", "200ms", ...(opts.args ?? [])];
  if (opts.testClock ?? true) args.push("--test-clock");
  const proc: ChildProcess = spawn(bin, args, {
    stdio: ["ignore", "ignore", process.env.CAIRN_DEBUG ? "inherit" : "ignore"],
    env: { ...process.env, CAIRN_LOG_LEVEL: "warn", ...opts.env },
  });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  const spawnFailed = new Promise<Error>((r) => proc.once("error", r));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGTERM");
      await exited;
    }
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await ready(url, proc, spawnFailed, opts.readyTimeoutMs ?? 20_000);
  } catch (e) {
    await stop();
    throw e;
  }
  const client = new Client({ server: url });
  return {
    url,
    client,
    dir,
    clock: {
      now: async () => new Date((await client.clock()).now),
      advance: (ms) => client.advanceClock(ms),
    },
    stop,
  };
}

async function ready(url: string, proc: ChildProcess, spawnFailed: Promise<Error>, timeoutMs: number): Promise<void> {
  let failed: Error | undefined;
  void spawnFailed.then((e) => (failed = e));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(`${url}/v1/api/readyz`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    if (failed) throw new Error(`cannot start ${proc.spawnfile}: ${failed.message} (set CAIRN_BIN or opts.bin)`);
    if (proc.exitCode !== null || Date.now() > deadline) {
      throw new Error(`cairn dev did not become ready within ${timeoutMs} ms (exit ${proc.exitCode})`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

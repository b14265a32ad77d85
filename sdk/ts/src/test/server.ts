// Starts a real `cairn dev` (the binary in $CAIRN_BIN, built by make
// ts-test) on a free 127.0.0.1 port and a temporary directory, with fast
// lease timings, for the tests of this package.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before } from "node:test";

import { Client, type Logger, type Worker } from "../index.js";

export interface DevServer {
  url: string;
  client: Client;
  /** The directory cairn dev keeps its bucket (the file store) in. */
  dir: string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

/** Starts cairn dev; env adds variables (CAIRN_CLAIM_HOLD…) to its environment. */
export async function startServer(env: Record<string, string> = {}): Promise<DevServer> {
  const bin = process.env.CAIRN_BIN;
  if (!bin) throw new Error("CAIRN_BIN is not set: run the tests with make ts-test");
  const dir = mkdtempSync(join(tmpdir(), "cairn-ts-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(bin, ["dev", "--addr", `127.0.0.1:${port}`, "--dir", dir, "--lease-ttl", "1500ms", "--reap-every", "200ms"], {
    stdio: ["ignore", "ignore", process.env.CAIRN_DEBUG ? "inherit" : "ignore"],
    env: { ...process.env, CAIRN_LOG_LEVEL: "warn", ...env },
  });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  const client = new Client({ server: url });
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/v1/api/readyz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`cairn dev did not become ready (exit ${proc.exitCode})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    client,
    dir,
    async stop() {
      proc.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * One cairn dev for a test file: started before its tests, stopped after
 * them. Its url and client are set once the tests run.
 */
export function serverForFile(env: Record<string, string> = {}): DevServer {
  const srv = {} as DevServer;
  before(async () => {
    Object.assign(srv, await startServer(env));
  });
  after(async () => {
    await srv.stop();
  });
  return srv;
}

/** Serves w until the returned stop is awaited; resolves once w is ready. */
export async function serving(w: Worker): Promise<() => Promise<void>> {
  const done = w.serve();
  await Promise.race([w.ready, done]);
  return async () => {
    w.stop();
    await done;
  };
}

/** Serves w while body runs, and stops it after (however body ends). */
export async function whileServing<T>(w: Worker, body: () => Promise<T>): Promise<T> {
  const stop = await serving(w);
  try {
    return await body();
  } finally {
    await stop();
  }
}

/** A Logger keeping records, for assertions; silent. */
export function memLogger(): Logger & { records: { level: string; msg: string; attrs?: Record<string, unknown> }[] } {
  const records: { level: string; msg: string; attrs?: Record<string, unknown> }[] = [];
  const at = (level: string) => (msg: string, attrs?: Record<string, unknown>) => void records.push({ level, msg, attrs });
  return { records, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** The files under dir (a server's bucket) whose bytes hold s. */
export function bucketHolds(dir: string, s: string): string[] {
  const needle = Buffer.from(s);
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((p) => readFileSync(p).includes(needle))
    .map((p) => relative(dir, p));
}

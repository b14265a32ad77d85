// Starts a real `cairn dev` (the binary in $CAIRN_BIN, built by make
// ts-test) on a free 127.0.0.1 port and a temporary directory, with fast
// lease timings, for the tests of this package.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before } from "node:test";

import { Client, type Logger, type Worker } from "../index.js";
import { freePort, startTestServer, type TestServer } from "../testing.js";

/** A test's cairn dev (startTestServer's, in $CAIRN_BIN, built by make ts-test). */
export type DevServer = TestServer;

export { freePort };

/** Starts cairn dev; env adds variables (CAIRN_CLAIM_HOLD…) to its environment. */
export async function startServer(env: Record<string, string> = {}): Promise<DevServer> {
  if (!process.env.CAIRN_BIN) throw new Error("CAIRN_BIN is not set: run the tests with make ts-test");
  return startTestServer({ env });
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

/**
 * A client of the server at url whose step heartbeats fail as a network
 * error would while drop is true: the lease then expires and the reaper
 * offers the step again; the dropping attempt's next heartbeat is refused
 * fenced.
 */
export class DropHeartbeats {
  readonly client: Client;
  constructor(
    url: string,
    public drop = false,
  ) {
    const dropping: typeof fetch = async (input, init) => {
      const u = input instanceof Request ? input.url : String(input);
      if (this.drop && u.endsWith("/steps/heartbeat")) throw new TypeError("fetch failed (dropped by the test)");
      return fetch(input, init);
    };
    this.client = new Client({ server: url, fetch: dropping });
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

// Starts the Go worker of the mixed-language tests (test/goworker, built
// by make ts-test into $CAIRN_GO_WORKER).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";

/** Starts the Go worker against server url, env added to its environment; resolves once it registered, with its stop. */
export async function goWorker(url: string, env: Record<string, string> = {}): Promise<() => Promise<void>> {
  const bin = process.env.CAIRN_GO_WORKER;
  assert.ok(bin, "CAIRN_GO_WORKER is not set: run the tests with make ts-test");
  const go: ChildProcess = spawn(bin, [], { env: { ...process.env, CAIRN_SERVER: url, ...env }, stdio: ["ignore", "pipe", process.env.CAIRN_DEBUG ? "inherit" : "ignore"] });
  const exited = once(go, "exit");
  const stop = async () => {
    if (go.exitCode === null) go.kill("SIGTERM");
    await exited;
  };
  try {
    // The Go worker says "ready" once registered.
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error("the go worker did not start in 15 s")), 15_000);
      go.stdout!.on("data", (b: Buffer) => b.toString().includes("ready") && (clearTimeout(t), resolve()));
      go.once("exit", (code) => (clearTimeout(t), reject(new Error(`go worker exited ${code}`))));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return stop;
}

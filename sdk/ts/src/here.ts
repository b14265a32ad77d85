// runHere: a script drives its own run. It starts a run and serves its
// steps in this process, claims scoped to the run, until the run ends
// (docs/SDK-TS.md, "A script drives its own run").
import type { Client, Run, StartOptions } from "./client.js";
import { Worker, type WorkerOptions } from "./worker.js";
import type { WorkflowDef } from "./workflow.js";

/** runHere's options: the worker's, the start's (but input and version), and a signal. */
export interface RunHereOptions extends WorkerOptions, Omit<StartOptions, "input" | "version"> {
  /** Aborting it stops serving (the steps running are drained) and cancels nothing on the server. */
  signal?: AbortSignal;
  /** Called with the run once started (or found, with an idempotency key used before). */
  onStart?: (run: Run) => void;
}

/**
 * Starts a run of wf and serves its steps in this process until the run
 * ends, then returns it as client.wait does: a run that failed is
 * returned, not thrown (look at its status), and a function's run that
 * continued as new is followed, and served, to the last run of the chain.
 *
 * It registers wf as a Worker would and claims only steps of that run,
 * each served as a Worker serves it (retries, heartbeats, at_most_once,
 * durable functions, payloads by reference, the codec). Steps of other
 * runs are left to other workers, child runs included; a step of this run
 * is claimed by whichever asks first, this process or another worker that
 * serves wf. With an idempotencyKey, a script run again attaches to the
 * run it started before and drives it on.
 *
 * Aborting opts.signal stops serving and rejects with its reason; the run
 * goes on with whatever worker claims its steps.
 */
export async function runHere(client: Client, wf: WorkflowDef, input?: unknown, opts: RunHereOptions = {}): Promise<Run> {
  const { signal, onStart, correlation, idempotencyKey, deadline, state, priority, ...workerOpts } = opts;
  const w = new Worker(client, workerOpts).register(wf);
  let followed: Promise<Run> | undefined;
  await w.serveWith({ signal }, async (stop) => {
    const { run } = await client.start(wf.name, { input, version: wf.version, correlation, idempotencyKey, deadline, state, priority });
    onStart?.(run);
    w.scopeTo(run.id);
    const ended = new AbortController();
    stop.addEventListener("abort", () => ended.abort(), { once: true });
    followed = client
      .wait(run.id, { signal: stop, onProgress: (p) => w.scopeTo(p.id) })
      .then((r) => {
        w.endRun(r.id);
        return r;
      })
      .finally(() => ended.abort());
    // Its rejection is runHere's, below.
    followed.catch(() => {});
    return ended.signal;
  });
  signal?.throwIfAborted();
  if (!followed) throw new Error("cairn: runHere: the worker stopped before the run started");
  return followed;
}

// The worker: registers definitions, claims leases (reserving a slot for
// each first), runs step bodies, heartbeats every held lease in one batched
// call, reports complete/fail, and drains on shutdown. The semantics are
// the Go SDK's (docs/SDK.md, "The worker"); docs/SDK-TS.md for TypeScript.
import { hostname } from "node:os";

import { APIError } from "./errors.js";
import {
  AttemptTimeoutError,
  classOf,
  FatalError,
  InterruptError,
  LeaseLostError,
  RunEndedError,
  ShutdownError,
} from "./errors.js";
import { _sleep as sleep, type Attributes, type Client, type Lease, type Schemas, temporary, type Usage, unwrap } from "./client.js";
import { type CheckpointRequest, ContinueAsNew, driverOf, FunctionSuspended } from "./function.js";
import type { Handler, WorkflowDef } from "./workflow.js";
import { type Keyring, CodecError, open, sealMap, sealTop } from "./codec.js";
import { resolveLease, resolveLeaseValue } from "./payloads.js";
import { sendProgress } from "./stream.js";

/** Structured logging hook: msg plus attributes (run, step, attempt, worker, lease, err…). */
export interface Logger {
  debug(msg: string, attrs?: Record<string, unknown>): void;
  info(msg: string, attrs?: Record<string, unknown>): void;
  warn(msg: string, attrs?: Record<string, unknown>): void;
  error(msg: string, attrs?: Record<string, unknown>): void;
}

/** A Logger writing one JSON object per line to stderr, at info and above (debug with CAIRN_DEBUG=1). */
export const consoleLogger = (bound: Record<string, unknown> = {}): Logger => {
  const line = (level: string) => (msg: string, attrs?: Record<string, unknown>) =>
    process.stderr.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...bound, ...attrs }, errorReplacer) + "\n");
  return { debug: process.env.CAIRN_DEBUG ? line("DEBUG") : () => {}, info: line("INFO"), warn: line("WARN"), error: line("ERROR") };
};
const errorReplacer = (_k: string, v: unknown) => (v instanceof Error ? v.message : v);

/** Binds attributes to every record of a Logger. */
export function withAttrs(l: Logger, bound: Record<string, unknown>): Logger {
  return {
    debug: (m, a) => l.debug(m, { ...bound, ...a }),
    info: (m, a) => l.info(m, { ...bound, ...a }),
    warn: (m, a) => l.warn(m, { ...bound, ...a }),
    error: (m, a) => l.error(m, { ...bound, ...a }),
  };
}

export interface WorkerOptions {
  /** Bodies at once [4]. */
  concurrency?: number;
  /** Worker id [host-pid]. */
  name?: string;
  logger?: Logger;
  /** Graceful shutdown bound in ms [30000]. */
  drainTimeoutMs?: number;
  /** How long a claim is held open in ms [20000; the server caps it]. */
  claimWaitMs?: number;
  labels?: Record<string, string>;
  /** Keyring that encrypts what the steps write and decodes what they read [the client's]. */
  codec?: Keyring;
}

export interface StepInfo {
  run: string;
  workflow: string;
  version: string;
  step: string;
  attempt: number;
  delivery: Lease["delivery"];
  correlation: string | undefined;
  worker: string;
  lease: string;
  traceparent: string;
  /** The attempt fails with class timeout then. */
  timeoutAt: Date | undefined;
  /** For an item of a map step (step names the map step): its index in the items array. */
  item: number | undefined;
}

/** What a body gets besides its input. */
export interface StepContext {
  /** Aborted when the lease is lost (LeaseLostError), the run ended (RunEndedError), the timeout passed (AttemptTimeoutError) or the worker shut down past its drain timeout (ShutdownError): pass it to your I/O. */
  readonly signal: AbortSignal;
  readonly info: StepInfo;
  /** Stable across every attempt of this step of this run: pass it to side effects. */
  readonly idempotencyKey: string;
  readonly input: unknown;
  readonly log: Logger;
  /** An earlier step's output (one this step depends on, directly or not). */
  output<T = unknown>(step: string): T | undefined;
  outputs(): Record<string, unknown>;
  /** The run state when the lease was made. */
  state<T = unknown>(key: string): T | undefined;
  stateMap(): Record<string, unknown>;
  /** Top-level keys merged into the run state when the attempt ends (on failure too). */
  setStatePatch(patch: Record<string, unknown>): void;
  setState(key: string, value: unknown): void;
  /** Sets the run's search attributes when the attempt completes (null removes one); later calls replace earlier values of a name. */
  setAttributes(attrs: Attributes): void;
  /** Model tokens and counters of this attempt. */
  setUsage(u: Usage): void;
  /** A short summary of the attempt (any JSON value, at most 4 KiB encoded), sent with its complete or fail and kept on the attempt for timelines and audits; the flow never reads it. */
  setSummary(v: unknown): void;
  /** Publishes a progress value (any JSON value, at most 16 KiB) to the run's watchers; not stored (stream.ts). */
  progress(value: unknown): Promise<void>;
  /** The step was interrupted (`throw interrupt(payload)`) and resumed: true on every attempt until it completes or interrupts again. */
  readonly resumed: boolean;
  /** With resumed: the value `client.resumeStep` answered with. */
  readonly resume: unknown;
  /** With resumed: the payload the step last interrupted with. */
  readonly interrupted: unknown;
}

interface Attempt {
  lease: Lease;
  ctrl: AbortController;
  /** started acknowledged by the engine. */
  started: boolean;
  /** Set once complete/fail is being sent: heartbeats continue, aborts do not matter. */
  reporting: boolean;
}

const unservable = "unservable";

/** The most leases one claim may ask for (the API's maximum). */
const MAX_CLAIM = 100;

/** A 409 refusal's reason, or undefined. */
const refusal = (err: unknown) => (err instanceof APIError && err.status === 409 ? err.reason : undefined);

/** How many unnamed workers this process made: the second on number their ids. */
let unnamedWorkers = 0;

export class Worker {
  readonly id: string;
  private readonly c: Client;
  private readonly defs: WorkflowDef[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly drainTimeoutMs: number;
  private readonly claimWaitMs: number;
  private readonly labels: Record<string, string> | undefined;
  private readonly ownCodec: Keyring | undefined;
  private readonly inflight = new Map<string, Attempt>();
  private readonly ended = new Map<string, number>();
  private free = 0;
  private slotWaiters: (() => void)[] = [];
  private heartbeatMs = 10_000;
  private leaseTTLMs = 30_000;
  private stopCtrl = new AbortController();
  /** The run the claims are scoped to (runHere, here.ts); undefined serves every run. */
  private scope: string | undefined;
  /** Aborts the claim in flight when the scope changes. */
  private claimCtrls = new Set<AbortController>();
  private readyResolve!: () => void;
  /** Resolves once the worker registered and claims. */
  ready: Promise<void>;

  constructor(client: Client, opts: WorkerOptions = {}) {
    this.c = client;
    this.ownCodec = opts.codec;
    // Unnamed workers of one process each get an id of their own: the
    // engine keeps one record per id (the last registration's workflows)
    // and avoids an id after an unservable fail, so workers sharing one
    // would take each other's steps and be avoided together.
    if (opts.name) {
      this.id = opts.name;
    } else {
      const n = ++unnamedWorkers;
      this.id = n > 1 ? `${hostname()}-${process.pid}-${n}` : `${hostname()}-${process.pid}`;
    }
    this.log = withAttrs(opts.logger ?? consoleLogger(), { worker: this.id });
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
    this.drainTimeoutMs = opts.drainTimeoutMs ?? 30_000;
    this.claimWaitMs = opts.claimWaitMs ?? 20_000;
    this.labels = opts.labels;
    this.ready = new Promise((r) => (this.readyResolve = r));
  }

  /** Adds workflows this worker serves. */
  register(...defs: WorkflowDef[]): this {
    this.defs.push(...defs);
    return this;
  }

  /** Leases held. */
  get inFlight(): number {
    return this.inflight.size;
  }

  /** Stops the worker: no more claims, then the drain. serve() resolves when it is over. */
  stop(): void {
    this.stopCtrl.abort();
  }

  /**
   * Registers, then claims and runs steps until stop() is called, signal
   * is aborted, or (with handleSignals) the process gets SIGTERM or
   * SIGINT; then drains: running bodies get drainTimeoutMs to finish and
   * report, the rest are aborted with ShutdownError and reported as
   * interrupted.
   */
  async serve(opts: { signal?: AbortSignal; handleSignals?: boolean } = {}): Promise<void> {
    return this.serveWith(opts);
  }

  /**
   * @internal serve, for runHere (here.ts): once registered it calls
   * here, and claims until the signal here returns is aborted.
   */
  async serveWith(opts: { signal?: AbortSignal; handleSignals?: boolean }, here?: (stop: AbortSignal) => Promise<AbortSignal>): Promise<void> {
    if (this.stopCtrl.signal.aborted) this.stopCtrl = new AbortController();
    const stop = this.stopCtrl;
    const onSignal = () => {
      this.log.info("signal received: draining");
      stop.abort();
    };
    if (opts.handleSignals) {
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
    }
    const external = () => stop.abort();
    opts.signal?.addEventListener("abort", external, { once: true });
    if (opts.signal?.aborted) stop.abort();
    try {
      const wfs = this.prepare();
      const reg = await this.registerWithRetry(wfs, stop.signal);
      if (!reg) return;
      this.heartbeatMs = reg.heartbeat_ms;
      this.leaseTTLMs = reg.lease_ttl_ms;
      this.free = this.concurrency;
      this.log.info("worker registered", { workflows: wfs.map((w) => `${w.name}@${w.version}`), heartbeat_ms: reg.heartbeat_ms, lease_ttl_ms: reg.lease_ttl_ms });
      const bodies = new Set<Promise<void>>();
      const hbStop = new AbortController();
      const hb = this.heartbeatLoop(hbStop.signal);
      this.readyResolve();
      let claimSignal: AbortSignal | undefined = stop.signal;
      let hereErr: { err: unknown } | undefined;
      if (here) {
        try {
          claimSignal = await here(stop.signal);
        } catch (err) {
          hereErr = { err };
          claimSignal = undefined;
        }
      }
      if (claimSignal) {
        // A claim asks for at most MAX_CLAIM leases: a worker with more
        // slots holds a claim per MAX_CLAIM slots, so that a burst of
        // starts is handed to all its free slots.
        const sig = claimSignal;
        const loops = Math.max(1, Math.ceil(this.concurrency / MAX_CLAIM));
        await Promise.all(Array.from({ length: loops }, () => this.claimLoop(sig, bodies)));
      }
      await this.drain(bodies);
      hbStop.abort();
      await hb;
      // Say so, so that the worker is listed as gone at once, not after the
      // server's alive window; best effort, bounded.
      const bound = new AbortController();
      const timeout = sleep(5_000, bound.signal).catch(() => undefined);
      await Promise.race([this.c.stopWorker(this.id), timeout])
        .catch((err: unknown) => this.log.debug("could not say the worker stopped", { err: String(err) }))
        .finally(() => bound.abort());
      this.log.info("worker stopped");
      if (hereErr) throw hereErr.err;
    } finally {
      if (opts.handleSignals) {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      }
      opts.signal?.removeEventListener("abort", external);
      this.ready = new Promise((r) => (this.readyResolve = r));
    }
  }

  private prepare(): Schemas["Workflow"][] {
    if (this.defs.length === 0) throw new Error("cairn: the worker serves no workflow: call register before serve");
    const seen = new Set<string>();
    return this.defs.map((d) => {
      const key = `${d.name}@${d.version}`;
      if (seen.has(key)) throw new Error(`cairn: workflow ${key} registered twice with this worker`);
      seen.add(key);
      for (const [id, h] of d.handlers) this.handlers.set(`${d.name}\u0000${d.version}\u0000${id}`, h);
      return d.definition();
    });
  }

  private async registerWithRetry(workflows: Schemas["Workflow"][], signal: AbortSignal) {
    let delay = 200;
    for (;;) {
      try {
        return unwrap(
          await this.c.api.POST("/v1/api/workers/register", {
            body: { worker_id: this.id, workflows, labels: this.labels },
            signal,
          }),
        );
      } catch (err) {
        if (signal.aborted) return undefined;
        if (err instanceof APIError && !err.temporary) throw new Error(`cairn: registering worker ${this.id}: ${err.message}`, { cause: err });
        this.log.warn("registering failed; retrying", { err });
        await sleep(delay, signal).catch(() => {});
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  // ---- slots ----

  private async reserve(signal: AbortSignal): Promise<number> {
    while (this.free === 0) {
      if (signal.aborted) return 0;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          resolve();
        };
        this.slotWaiters.push(done);
        signal.addEventListener("abort", done, { once: true });
      });
    }
    if (signal.aborted) return 0;
    // One claim asks for at most MAX_CLAIM leases (the API's maximum); a
    // worker with more slots holds several claims.
    const n = Math.min(this.free, MAX_CLAIM);
    this.free -= n;
    return n;
  }

  private release(n = 1): void {
    this.free += n;
    const ws = this.slotWaiters;
    this.slotWaiters = [];
    for (const w of ws) w();
  }

  // ---- claim ----

  private async claimLoop(signal: AbortSignal, bodies: Set<Promise<void>>): Promise<void> {
    let delay = 200;
    // The server's pause between empty claims (pause_ms, e.g. on Lambda,
    // where a held claim is an execution environment): from 1 s doubling
    // up to the pause, each wait half to all of it; leases reset it.
    let idle = 0;
    while (!signal.aborted) {
      const n = await this.reserve(signal);
      if (n === 0) break;
      let leases: Lease[];
      let pauseMs = 0;
      const run = this.scope;
      const ctrl = new AbortController();
      this.claimCtrls.add(ctrl);
      try {
        const answer = unwrap(
          await this.c.api.POST("/v1/api/steps/claim", {
            body: { worker_id: this.id, max: n, wait_ms: this.claimWaitMs, run },
            signal: run === undefined ? signal : AbortSignal.any([signal, ctrl.signal]),
          }),
        );
        this.claimCtrls.delete(ctrl);
        leases = answer.leases;
        pauseMs = Math.min(answer.pause_ms ?? 0, 60_000);
        delay = 200;
      } catch (err) {
        this.claimCtrls.delete(ctrl);
        this.release(n);
        if (signal.aborted) break;
        if (ctrl.signal.aborted) continue; // scoped to a run that ended: no lease of it was lost
        if (run !== undefined && refusal(err) === "run_terminal") {
          // The run the claims are scoped to has ended: runHere learns
          // so and stops claiming, or scopes them to the run it continued as.
          this.log.debug("the run the claims are scoped to has ended", { run });
          await sleep(delay, AbortSignal.any([signal, ctrl.signal])).catch(() => {});
          delay = Math.min(delay * 2, 10_000);
          continue;
        }
        this.log.warn("claim failed; retrying", { err });
        await sleep(delay, signal).catch(() => {});
        delay = Math.min(delay * 2, 10_000);
        continue;
      }
      if (leases.length < n) this.release(n - leases.length);
      for (const lease of leases) {
        const p = this.dispatch(lease).catch((err) => this.log.error("step dispatch failed", { err, run: lease.run, step: lease.step, attempt: lease.attempt }));
        bodies.add(p);
        void p.finally(() => bodies.delete(p));
      }
      if (leases.length > 0) {
        idle = 0;
      } else if (pauseMs > 0) {
        // Wait here, where waiting costs nothing: other workers' claims
        // and the hints pick up what becomes ready meanwhile.
        idle = idle === 0 ? Math.min(1000, pauseMs) : Math.min(idle * 2, pauseMs);
        await sleep(idle / 2 + (Math.random() * idle) / 2, signal).catch(() => {});
      }
    }
  }

  /** @internal Scopes the claims to run (runHere), aborting a claim in flight scoped to another. */
  scopeTo(run: string): void {
    if (this.scope === run) return;
    this.scope = run;
    for (const c of this.claimCtrls) c.abort();
  }

  /** @internal A run ended (runHere): abort its bodies and drop its later leases. */
  endRun(run: string): void {
    this.runEnded(run);
  }

  /** The worker's keyring (codec.ts): its own, else its client's. */
  private get keyring(): Keyring | undefined {
    return this.ownCodec ?? this.c.codec;
  }

  /** The clear keys of a workflow this worker serves. */
  private clearOf(workflow: string, version?: string): Set<string> {
    const ds = this.defs.filter((d) => d.name === workflow && (version === undefined || d.version === version));
    return ds.length === 1 ? ds[0]!.clearKeys() : new Set();
  }

  /** Decodes a lease's input, earlier outputs, state and history in place. */
  private openLease(l: Lease): void {
    const k = this.keyring;
    if (!k) return;
    l.input = open(k, l.input);
    for (const key of Object.keys(l.steps ?? {})) l.steps[key] = open(k, l.steps[key]);
    for (const key of Object.keys(l.state ?? {})) l.state[key] = open(k, l.state[key]);
    for (const op of l.history ?? []) op.result = open(k, op.result);
  }

  /** Encrypts what a complete, fail or checkpoint sends. */
  private seal(l: Lease, body: Record<string, unknown>): Record<string, unknown> {
    const k = this.keyring;
    if (!k) return body;
    const out = { ...body };
    if ("output" in out) out.output = k.encrypt(out.output ?? null);
    if (out.state_patch) out.state_patch = sealMap(k, out.state_patch as Record<string, unknown>, this.clearOf(l.workflow, l.version));
    const cont = out.continue_as_new as { input?: unknown } | undefined;
    if (cont) out.continue_as_new = { input: sealTop(k, cont.input ?? null, this.clearOf(l.workflow, l.version)) }; // a start's input
    return out;
  }

  private sealCheckpoint(body: CheckpointRequest): CheckpointRequest {
    const k = this.keyring;
    if (!k) return body;
    const out: CheckpointRequest = { ...body, operations: body.operations.map((op) => (op.result === undefined ? op : { ...op, result: k.encrypt(op.result) })) };
    const inv = body.suspend?.invoke;
    if (inv && inv.input !== undefined) out.suspend = { ...body.suspend, invoke: { ...inv, input: sealTop(k, inv.input, this.clearOf(inv.workflow, inv.version)) } };
    return out;
  }

  private handler(l: Lease): Handler | undefined {
    return this.handlers.get(`${l.workflow}\u0000${l.version}\u0000${l.step}`);
  }

  private async dispatch(lease: Lease): Promise<void> {
    const log = withAttrs(this.log, { run: lease.run, workflow: lease.workflow, step: lease.step, attempt: lease.attempt });
    const a: Attempt = { lease, ctrl: new AbortController(), started: false, reporting: false };
    this.inflight.set(lease.id, a);
    try {
      if (this.ended.has(lease.run)) return;
      const h = this.handler(lease);
      if (!h) {
        log.warn("no handler for this step: failing the lease as unservable");
        await this.report(a, log, "fail", { error: { class: unservable, message: `worker ${this.id} has no handler for ${lease.workflow}@${lease.version} step ${lease.step}` } });
        return;
      }
      // Values stored by reference are read before started: a read that
      // keeps failing costs a retryable attempt, not a body run on references.
      let unresolved: unknown;
      for (let delay = 100; delay <= 800; delay *= 2) {
        try {
          await resolveLease(this.c.api, lease);
          unresolved = undefined;
          break;
        } catch (err) {
          unresolved = err;
          await sleep(delay);
        }
      }
      if (!(await this.sendStarted(a, log))) return;
      if (unresolved !== undefined) {
        log.warn("reading the lease's values stored by reference failed", { err: unresolved });
        await this.report(a, log, "fail", { error: { class: "retryable", message: `reading the step's values stored by reference: ${String(unresolved)}` } });
        return;
      }
      try {
        this.openLease(lease);
      } catch (err) {
        if (!(err instanceof CodecError)) throw err;
        log.warn("a value of the lease does not decrypt", { err: err.message });
        await this.report(a, log, "fail", { error: { class: "codec", message: `decrypting the step's values: ${err.message}` } });
        return;
      }
      await this.run(a, h, log);
    } finally {
      this.inflight.delete(lease.id);
      this.release();
    }
  }

  private async sendStarted(a: Attempt, log: Logger): Promise<boolean> {
    const until = Date.now() + this.leaseTTLMs;
    let delay = 100;
    for (;;) {
      try {
        unwrap(await this.c.api.POST("/v1/api/steps/{lease}/started", { params: { path: { lease: a.lease.id } } }));
        a.started = true;
        return true;
      } catch (err) {
        const reason = refusal(err);
        if (reason === "already_applied") {
          a.started = true;
          return true;
        }
        if (reason === "run_terminal") this.runEnded(a.lease.run);
        if (reason || (err instanceof APIError && err.status < 500 && err.status !== 429) || Date.now() > until) {
          log.info("started refused; dropping the lease", { err });
          return false;
        }
        await sleep(delay);
        delay = Math.min(delay * 2, 2000);
      }
    }
  }

  private async run(a: Attempt, h: Handler, log: Logger): Promise<void> {
    const l = a.lease;
    let patch: Record<string, unknown> | undefined;
    let attributes: Attributes | undefined;
    let usage: Usage | undefined;
    let summary: unknown;
    const timeoutAt = l.timeout_at ? new Date(l.timeout_at) : undefined;
    const timer = timeoutAt ? setTimeout(() => a.ctrl.abort(new AttemptTimeoutError()), Math.max(0, timeoutAt.getTime() - Date.now())) : undefined;
    const ctx: StepContext = {
      signal: a.ctrl.signal,
      info: {
        run: l.run,
        workflow: l.workflow,
        version: l.version,
        step: l.step,
        attempt: l.attempt,
        delivery: l.delivery,
        correlation: l.correlation,
        worker: this.id,
        lease: l.id,
        traceparent: l.traceparent,
        timeoutAt,
        item: l.item,
      },
      idempotencyKey: l.idempotency_key,
      input: l.input,
      log,
      output: <T>(step: string) => l.steps[step] as T | undefined,
      outputs: () => ({ ...l.steps }),
      state: <T>(key: string) => l.state[key] as T | undefined,
      stateMap: () => ({ ...l.state }),
      setStatePatch: (p) => {
        patch = { ...patch, ...p };
      },
      setState: (k, v) => {
        patch = { ...patch, [k]: v };
      },
      setAttributes: (v) => {
        attributes = { ...attributes, ...v };
      },
      setUsage: (u) => {
        usage = u;
      },
      setSummary: (v) => {
        const n = Buffer.byteLength(JSON.stringify(v) ?? "");
        if (n > 4096) throw new RangeError(`cairn: a summary of ${n} bytes is over the 4096-byte limit`);
        summary = v;
      },
      progress: (v) => sendProgress(this.c.transport, l.id, v, a.ctrl.signal),
      resumed: l.resumed ?? false,
      resume: l.resume,
      interrupted: l.interrupt,
    };
    let output: unknown;
    let error: unknown;
    let ok = false;
    const t0 = Date.now();
    const driver = driverOf(h);
    try {
      output = driver
        ? await driver(ctx, { lease: l, checkpoint: (req) => this.checkpoint(a, log, req.suspend && usage ? { ...req, usage } : req) /* a suspension ends the attempt: its usage goes with it */, abort: (r) => a.ctrl.abort(r), payload: async (v) => open(this.keyring, await resolveLeaseValue(this.c.api, l.id, v)) })
        : await h(ctx, l.input);
      ok = true;
    } catch (err) {
      error = err;
    } finally {
      clearTimeout(timer);
    }
    const reason = a.ctrl.signal.reason as unknown;
    if (reason instanceof LeaseLostError || reason instanceof RunEndedError) {
      log.info("body cancelled; nothing reported", { cause: reason.message });
      return;
    }
    if (reason instanceof FunctionSuspended || error instanceof FunctionSuspended) {
      // The engine ended the attempt at the function's suspension.
      log.debug("the function suspended; nothing reported", { ms: Date.now() - t0 });
      return;
    }
    a.reporting = true;
    const extra = { state_patch: patch, usage, summary };
    if (ok) {
      log.debug("step completed", { ms: Date.now() - t0 });
      await this.report(a, log, "complete", { output: output ?? null, attributes, ...extra });
      return;
    }
    if (driver && error instanceof ContinueAsNew && !reason) {
      log.debug("the function continues as a new run", { ms: Date.now() - t0 });
      await this.report(a, log, "complete", { continue_as_new: { input: error.input ?? null }, ...extra });
      return;
    }
    if (error instanceof InterruptError && !reason) {
      log.info("step interrupted by its body", { ms: Date.now() - t0 });
      await this.report(a, log, "interrupt", { payload: error.payload ?? null, ...extra });
      return;
    }
    let cls = classOf(error);
    if (reason instanceof AttemptTimeoutError) cls = "timeout";
    else if (reason instanceof ShutdownError) cls = "interrupted";
    const message = error instanceof Error ? error.message : String(error);
    log.warn("step failed", { class: cls, err: message });
    await this.report(a, log, "fail", { error: { class: cls, message }, ...extra });
  }

  /** Sends complete, fail or interrupt, retrying network errors, 5xx and 429 for a few lease TTLs. */
  private async report(a: Attempt, log: Logger, kind: "complete" | "fail" | "interrupt", body: Record<string, unknown>): Promise<void> {
    body = this.seal(a.lease, body); // codec.ts
    const until = Date.now() + 3 * this.leaseTTLMs;
    let delay = 100;
    const lease = a.lease.id;
    for (;;) {
      try {
        if (kind === "complete") {
          unwrap(await this.c.api.POST("/v1/api/steps/{lease}/complete", { params: { path: { lease } }, body: body as Schemas["CompleteRequest"] }));
        } else if (kind === "interrupt") {
          unwrap(await this.c.api.POST("/v1/api/steps/{lease}/interrupt", { params: { path: { lease } }, body: body as Schemas["InterruptRequest"] }));
        } else {
          unwrap(await this.c.api.POST("/v1/api/steps/{lease}/fail", { params: { path: { lease } }, body: body as Schemas["FailRequest"] }));
        }
        return;
      } catch (err) {
        const reason = refusal(err);
        switch (reason) {
          case "already_applied":
            return;
          case "fenced":
            log.info(`${kind} refused: the lease was lost`);
            return;
          case "run_terminal":
            this.runEnded(a.lease.run);
            return;
          case "not_started":
            log.error(`${kind} refused not_started: a worker bug (the SDK sends started first)`);
            return;
          case "too_large":
            if (kind !== "fail") {
              kind = "fail";
              body = { error: { class: "output_too_large", message: (err as APIError).detail || "the output or state patch is too large for the run record" }, usage: body.usage };
            } else {
              body = { ...body, state_patch: undefined, error: { ...(body.error as object), message: `${(body.error as { message: string }).message} (state patch dropped: too large)` } };
            }
            continue;
        }
        if (err instanceof APIError && err.status === 422) {
          if (kind !== "fail") {
            body = { error: { class: "fatal", message: `${kind === "interrupt" ? "interrupt" : "output"} refused: ${err.message}` }, usage: body.usage };
            kind = "fail";
            continue;
          }
          log.error("fail refused as invalid", { err });
          return;
        }
        if ((err instanceof APIError && err.status < 500 && err.status !== 429) || Date.now() > until) {
          log.error(`${kind} failed; giving up`, { err });
          return;
        }
        log.warn(`${kind} failed; retrying`, { err });
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /**
   * Records a durable function's operations under a's lease (with a
   * suspension, ending the attempt). Resending is safe (the engine skips
   * operations recorded at their seq), so failures that may not have
   * reached it are retried for a few lease TTLs. A refusal is answered by
   * its reason (fenced aborts the body, run_terminal stops the run's
   * bodies) and thrown; an operation the engine refuses (the history's
   * limits) fails the function.
   */
  private async checkpoint(a: Attempt, log: Logger, body: CheckpointRequest): Promise<void> {
    body = this.sealCheckpoint(body); // codec.ts
    const until = Date.now() + Math.max(60_000, 3 * this.leaseTTLMs);
    let delay = 100;
    const lease = a.lease.id;
    for (;;) {
      try {
        unwrap(await this.c.api.POST("/v1/api/steps/{lease}/checkpoint", { params: { path: { lease } }, body }));
        return;
      } catch (err) {
        switch (refusal(err)) {
          case "already_applied":
            return;
          case "fenced":
            log.warn("checkpoint refused: the lease was fenced (reclaimed, or the history changed); the work is dropped", { err });
            if (!a.reporting) a.ctrl.abort(new LeaseLostError(lease));
            throw a.ctrl.signal.reason ?? err;
          case "run_terminal":
            log.info("checkpoint refused: the run has ended; its bodies are stopped");
            this.runEnded(a.lease.run);
            throw a.ctrl.signal.reason ?? err;
        }
        if (err instanceof APIError && err.status === 422) throw new FatalError(`the engine refused the function's checkpoint: ${err.message}`, { cause: err });
        const reason = a.ctrl.signal.reason as unknown;
        if (reason instanceof LeaseLostError || reason instanceof RunEndedError) throw reason; // a heartbeat learned the outcome meanwhile
        const network = err instanceof TypeError || temporary(err) || (err instanceof APIError && err.status >= 500);
        if (!network || Date.now() > until) {
          log.error("checkpoint failed; giving up", { err });
          throw err;
        }
        log.warn("checkpoint failed; retrying", { err });
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /** A run ended: abort its bodies and drop its later leases. */
  private runEnded(run: string): void {
    this.ended.set(run, Date.now());
    for (const [id, at] of this.ended) if (Date.now() - at > 10 * 60_000) this.ended.delete(id);
    for (const a of this.inflight.values()) if (a.lease.run === run && !a.reporting) a.ctrl.abort(new RunEndedError(run));
  }

  // ---- heartbeats ----

  private async heartbeatLoop(stop: AbortSignal): Promise<void> {
    // Runs until the drain is over (stop): bodies still running need
    // their leases renewed while they finish.
    while (!stop.aborted) {
      await sleep(this.heartbeatMs, stop).catch(() => {});
      if (stop.aborted) return;
      const ids = [...this.inflight.keys()];
      for (let i = 0; i < ids.length; i += 100) {
        const chunk = ids.slice(i, i + 100);
        try {
          const r = unwrap(await this.c.api.POST("/v1/api/steps/heartbeat", { body: { leases: chunk } }));
          for (const res of r.results) {
            const a = this.inflight.get(res.lease);
            if (!a || a.reporting) continue;
            if (res.reason === "fenced") a.ctrl.abort(new LeaseLostError(res.lease));
            else if (res.reason === "run_terminal") this.runEnded(a.lease.run);
          }
        } catch (err) {
          this.log.warn("heartbeat failed", { err, leases: chunk.length });
        }
      }
    }
  }

  // ---- drain ----

  private async drain(bodies: Set<Promise<void>>): Promise<void> {
    if (bodies.size > 0) {
      this.log.info("draining", { bodies: bodies.size, drain_timeout_ms: this.drainTimeoutMs });
      const all = Promise.allSettled([...bodies]);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.drainTimeoutMs)))]);
      clearTimeout(timer);
      if (timedOut) {
        for (const a of this.inflight.values()) {
          if (a.lease.delivery === "at_most_once" && !a.started) continue;
          if (!a.reporting) a.ctrl.abort(new ShutdownError());
        }
        this.log.warn("drain timeout passed: bodies cancelled");
        // A second for the cancelled bodies to return and report.
        await Promise.race([all, sleep(1000)]);
      }
    }
  }
}

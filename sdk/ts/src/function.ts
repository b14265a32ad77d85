// Durable functions: a workflow written as ordinary code. Its body calls
// operations on a DurableContext — step, sleep, sleepUntil, waitForEvent,
// invoke, map, parallel, race, now, random, uuid, patched — each named by the
// caller, and each
// operation's outcome is checkpointed in the bucket under the driver's
// lease. A crash, a deploy or a long sleep ends the attempt; the next
// attempt runs the body again and every operation already recorded
// returns its recorded outcome at once (replay). The body must therefore
// reach the same operations on every replay: docs/FUNCTIONS.md has the
// rules. The semantics and the wire are the Go SDK's (sdk/function.go): a
// history recorded by a Go worker replays here, and the reverse.
import { randomUUID } from "node:crypto";

import type { Lease, Schemas } from "./client.js";
import { fixedError } from "./errorclass.js";
import { AttemptTimeoutError, classOf, FatalError, RetryableError, ShutdownError, StepFailure } from "./errors.js";
import { asPayloadRef } from "./payloads.js";
import type { Logger, StepContext, StepInfo } from "./worker.js";
import { type Duration, type Handler, type RetryPolicy, type StepOptions, WorkflowDef, type WorkflowOptions } from "./workflow.js";

type Operation = Schemas["Operation"];

/** An update a durable function's wait took: its id ("" for an event, which has no sender to answer) and input. */
export interface Received<T = unknown> {
  id: string;
  input: T;
}
type Suspension = Schemas["Suspension"];
type ErrorInfo = Schemas["ErrorInfo"];
type Invocation = Schemas["Invocation"];
export type CheckpointRequest = Schemas["CheckpointRequest"];

/** The body of a durable function: the run's input in, the output (any JSON value) out. */
export type FunctionBody<In = any, Out = unknown> = (ctx: DurableContext, input: In) => Promise<Out> | Out;

/** Options of a function step: a task's flow control and lease options, and its retry policy (the function's whole attempts). */
export type FunctionOptions = Pick<StepOptions, "after" | "input" | "retry" | "timeout" | "maxDeliveries" | "concurrency" | "rateLimit" | "priority">;

/** Options of ctx.step: a task's. */
export interface DurableStepOptions {
  /**
   * The step is retried in the attempt, backing off, by its error's class
   * (default: a task's, 3 attempts from 1s). A backoff longer than an
   * inline sleep (2 s) suspends the function until the next try, recorded
   * as a sleep <step id>.retry#<n>.
   */
  retry?: RetryPolicy;
  /** The longest one try may run: its signal is aborted then, and the error is of class timeout. */
  timeout?: Duration;
  /** Once the step started, it is never run again, even after a crash: a replay that finds it started without an outcome fails it with class lost. Not retried. */
  atMostOnce?: boolean;
}

/** The run ctx.invoke starts: a workflow, its version (the newest when the run starts, if absent) and its input. */
export interface Call {
  workflow: string;
  version?: string;
  input?: unknown;
}

/** Options of ctx.map. */
export interface MapOptions {
  /** The most items running at once (default, or 0: all). */
  limit?: number;
}

/**
 * A durable function's context: its operations, and the driver's
 * attempt. Operations named the same are told apart by their order: the
 * k-th use of a name in a scope is operation "<scope>/name#k" (the body's
 * scope is "", a map's or parallel's branch's "/<name>#<k>/<index>").
 */
export interface DurableContext {
  /** Aborted when the lease is lost, the run ended, the function suspended or the worker shut down. */
  readonly signal: AbortSignal;
  /** The driver's attempt. */
  readonly info: StepInfo;
  readonly log: Logger;
  /**
   * Runs fn once for the function: its result (any JSON value) is
   * checkpointed, and a replay returns it without running fn again. An
   * error that ends the step (retries spent, a class not retried) is
   * thrown with its class — the body may handle it, or let it fail the
   * function — and thrown again on replay.
   */
  step<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, opts?: DurableStepOptions): Promise<T>;
  /** Waits d; see sleepUntil. */
  sleep(name: string, d: Duration): Promise<void>;
  /**
   * Waits until t. A wait longer than a couple of seconds suspends the
   * function: the attempt ends, the worker's slot is freed, and the next
   * attempt replays the body at t (the promise then rejects with
   * FunctionSuspended, which the body must let through). The end is
   * recorded, so a replay waits for the same time.
   */
  sleepUntil(name: string, t: Date): Promise<void>;
  /**
   * Waits for an event named event sent to the run (client.sendEvent,
   * `cairn runs event`) and returns its payload. The function suspends
   * meanwhile. With a timeout, an event that has not come by then is not
   * waited for: the promise rejects with an error of class timeout (the
   * body may handle it). An event sent before the wait starts is kept for it.
   */
  waitForEvent<T = unknown>(name: string, event: string, opts?: { timeout?: Duration }): Promise<T>;
  /**
   * Waits, as waitForEvent, for an update named update sent to the run
   * (client.sendUpdate, `cairn runs update`) and returns it: answer it
   * with reply.
   */
  waitForUpdate<T = unknown>(name: string, update: string, opts?: { timeout?: Duration }): Promise<Received<T>>;
  /** Answers update u with answer: what its sender gets. Recorded once and sent at once: a replay does not answer again. */
  reply(u: Received<unknown>, answer: unknown): Promise<void>;
  /**
   * Starts a run of another workflow (a DAG or a function, served by any
   * worker in any language) and waits for it, the function suspended
   * meanwhile, returning the run's output; a run that did not complete
   * throws its error with its class (the body may handle it). The run
   * starts once, however often the body replays; it is cancelled if the
   * function's run ends first.
   */
  invoke<T = unknown>(name: string, call: Call): Promise<T>;
  /**
   * Runs fn on each item, at most limit at once (default: all), each in a
   * scope of its own (its operations' ids are under /<name>#<k>/<index>),
   * and resolves to the outputs in the items' order, or rejects with the
   * error of the first item (by index) that failed, its class kept. A
   * branch that sleeps, waits or invokes parks (its slot goes to the next
   * item) until no branch runs; the function then suspends once for all
   * of them: until the earliest wake time, and for one parked operation's
   * event or run (the others park again on the next replay).
   */
  map<In, Out>(name: string, items: readonly In[], fn: (ctx: DurableContext, item: In, index: number) => Promise<Out> | Out, opts?: MapOptions): Promise<Out[]>;
  /**
   * Runs branches at once, each in a scope of its own (see map), and
   * resolves to the index and the value of the one that ends first, or
   * rejects with its error; the others are cancelled (their signals are
   * aborted; what they recorded stays, unread). The winner is recorded: a
   * replay runs only it. A branch that sleeps, waits or invokes parks as
   * in map, so a race of a wait against a sleep suspends the function
   * until the first of them.
   *
   *     const { index, value } = await ctx.race("approval-or-timeout", waitApproval, sleepADay);
   */
  race<T>(name: string, ...branches: ((ctx: DurableContext) => Promise<T> | T)[]): Promise<{ index: number; value: T }>;
  /** Runs branches at once, each in a scope of its own (see map), and resolves to their outputs in order, or rejects with the first error (by position). */
  parallel<T extends unknown[]>(name: string, ...branches: { [K in keyof T]: (ctx: DurableContext) => Promise<T[K]> | T[K] }): Promise<T>;
  /** The time, recorded: a replay sees the same time. */
  now(): Date;
  /** A random number in [0, 1), recorded. */
  random(): number;
  /** A random (version 4) UUID, recorded. */
  uuid(): string;
  /**
   * Whether the run takes the code path change id introduced: true for a
   * run that reaches it first (the choice is recorded), false for a run
   * whose history was recorded by the code before the change. Remove the
   * check once no run in flight predates the change.
   */
  patched(id: string): boolean;
  /**
   * Ends the run and starts a fresh run of the same workflow and version
   * with input and an empty history (once, however often the body
   * replays): for a loop that would outgrow the history. The old run
   * completes with output {"continued_as": <new run id>}, its view's
   * continued_as names the new run, whose continued_from names it back.
   * It throws a ContinueAsNew, which the body lets through:
   *
   *     if (more) return ctx.continueAsNew({ cursor: next });
   */
  continueAsNew(input: unknown): never;
}

/**
 * What a function body throws (or ctx.continueAsNew throws for it) to
 * end its run and continue as a new run of its workflow version with
 * input: the worker completes the function step with continue_as_new.
 */
export class ContinueAsNew extends Error {
  override readonly name = "ContinueAsNew";
  constructor(readonly input: unknown) {
    super("cairn: the function continues as a new run");
  }
}

/**
 * The error an operation rejects with once the function suspended (a
 * long sleep, a wait for an event): the engine ended the attempt, and a
 * later one goes on. The body must let it through; the worker reports
 * nothing for the attempt, whatever the body returns.
 */
export class FunctionSuspended extends fixedError("FunctionSuspended", "cairn: the function suspended; a later attempt goes on") {}

/** The reason a race's losing branches' signals are aborted with: another branch ended first. */
class RaceLost extends fixedError("RaceLost", "cairn: another branch of the race ended first") {}

/** The longest sleep, in ms, a driver waits out holding its lease; a longer one suspends the function. */
export const inlineSleepMs = 2000;

// Checkpoints: what the function recorded is sent before each step's
// body starts (so a completed step never runs again), before a
// suspension and when the body returns; records made between steps
// (values, patches, a last step's result) go in the background once the
// oldest has waited flushDelayMs, or at once when flushOps wait.
const flushOps = 32;
const flushDelayMs = 250;

/** What the worker gives a driver: its lease, the checkpoint call, and the end of its attempt. */
export interface DriverHooks {
  lease: Lease;
  checkpoint(req: CheckpointRequest): Promise<void>;
  /** Ends the attempt's signal with reason (the function suspended). */
  abort(reason: unknown): void;
  /** v, or the value it references when it is stored by reference (a large event payload), read through the lease. */
  payload?(v: unknown): Promise<unknown>;
}

const driverKey = Symbol("cairn.function");

type Driver = (ctx: StepContext, hooks: DriverHooks) => Promise<unknown>;

/** The driver of a step handler, when it is a function step's. */
export function driverOf(h: Handler): Driver | undefined {
  return (h as Handler & { [driverKey]?: Driver })[driverKey];
}

/** The handler of a function step whose body is body: the worker drives it (driverOf). */
export function functionHandler(body: FunctionBody): Handler {
  const h: Handler = () => {
    throw new Error("cairn: a function step is driven by the worker");
  };
  return Object.assign(h, { [driverKey]: ((ctx, hooks) => drive(ctx, hooks, body)) satisfies Driver });
}

/**
 * Defines a workflow of one durable function, step "main". Unlike a
 * task, the function is not retried when its body throws (an operation's
 * own retries are its step's): pass retry to change that.
 *
 *     defineFunction({ name: "triage", version: "1" }, async (ctx, ticket: Ticket) => { … })
 */
export function defineFunction<In = any, Out = unknown>(opts: WorkflowOptions, body: FunctionBody<In, Out>, fnOpts: FunctionOptions = {}): WorkflowDef {
  return new WorkflowDef(opts).function("main", body, { retry: { maxAttempts: 1 }, ...fnOpts });
}

/** Drives body for one attempt of its function step. */
async function drive(sc: StepContext, hooks: DriverHooks, body: FunctionBody): Promise<unknown> {
  const j = new Journal(sc, hooks);
  try {
    let out: unknown;
    let err: unknown;
    let threw = false;
    try {
      out = await body(new Durable(j, ""), sc.input);
    } catch (e) {
      err = e;
      threw = true;
    }
    if (sc.signal.reason instanceof ShutdownError) {
      // The worker is draining: the function goes on in another attempt
      // (no failure spent), from what it recorded.
      await j.flush({ until: new Date(j.now()).toISOString() });
      throw new FunctionSuspended();
    }
    // What the body recorded is sent when it continues as new too (the
    // history the Go SDK checks for unreached records is a return's only).
    const stop = j.stop ?? (threw ? undefined : j.unreached());
    if (stop !== undefined) throw stop;
    try {
      await j.flush();
    } catch (ferr) {
      if (!threw || err instanceof ContinueAsNew) throw ferr;
    }
    if (threw) throw err;
    return out;
  } finally {
    j.stopTimer();
  }
}

/** An attempt's history, shared by the body and its branches (map, parallel). */
class Journal {
  /** Set once the body must end: suspended, nondeterminism. */
  stop: Error | undefined;
  readonly info: StepInfo;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** Recorded and sent. */
  readonly hist: Operation[];
  /** Positions in hist by id. */
  private readonly byID = new Map<string, number[]>();
  /** Ids the body reached in this attempt. */
  readonly visited = new Set<string>();
  /** Recorded, not sent yet. */
  pending: Operation[] = [];
  /** The background flush of pending. */
  private timer: NodeJS.Timeout | undefined;
  /** One checkpoint at a time: seqs stay in order. */
  private flushing: Promise<unknown> = Promise.resolve();
  /**
   * The barrier of branches: running counts the scopes that may still
   * record operations; a suspension waits (parked) until none runs, and
   * the attempt then suspends once, for all of them.
   */
  running = 1;
  parked: { scope: string; sp: Suspension }[] = [];
  private suspending: Promise<never> | undefined;
  /**
   * The server's clock less this process's, as the lease tells it (it was
   * made at its expiry less its TTL): a function's times (sleeps,
   * timeouts, now) are the server's, which decides when they come due (a
   * test server's clock is moved).
   */
  private readonly skew: number;

  constructor(
    sc: StepContext,
    readonly hooks: DriverHooks,
  ) {
    const l = hooks.lease;
    this.skew = l.lease_ttl_ms > 0 && l.expires_at ? new Date(l.expires_at).getTime() - l.lease_ttl_ms - Date.now() : 0;
    this.info = sc.info;
    this.log = sc.log;
    this.signal = sc.signal;
    this.hist = [...(hooks.lease.history ?? [])];
    this.hist.forEach((op, i) => this.index(op.id, i));
  }

  /** The server's time, in ms since the epoch. */
  now(): number {
    return Date.now() + this.skew;
  }

  private index(id: string, i: number): void {
    const at = this.byID.get(id);
    if (at) at.push(i);
    else this.byID.set(id, [i]);
  }

  /** What the history and the pending records hold for id, in order. */
  records(id: string): Operation[] {
    const recs = (this.byID.get(id) ?? []).map((i) => this.hist[i]!);
    for (const op of this.pending) if (op.id === id) recs.push(op);
    return recs;
  }

  stopTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The nondeterminism of a body that returned leaving recorded operations unreached. */
  unreached(): Error | undefined {
    for (const op of this.hist) {
      if (!this.visited.has(op.id)) return this.broken(`the body returned without reaching ${op.kind} ${q(op.id)} (seq ${op.seq}), which the history records`);
    }
    return undefined;
  }

  /** Takes the parked suspensions of scope and the scopes under it back: they run again (to their end). */
  unpark(scope: string): void {
    this.parked = this.parked.filter((p) => {
      if (p.scope !== scope && !p.scope.startsWith(`${scope}/`)) return true;
      this.running++;
      return false;
    });
  }

  /** Marks what the losing branches of race id recorded as reached (winner is the winner's scope): they are not run again, and what they did stays unread. */
  lost(id: string, winner: string): void {
    for (const op of this.hist) if (op.id.startsWith(`${id}/`) && !op.id.startsWith(`${winner}/`)) this.visited.add(op.id);
  }

  /** Marks the recorded ids that start with prefix as reached: what a recorded outcome makes unread. */
  passed(prefix: string): void {
    for (const op of this.hist) if (op.id.startsWith(prefix)) this.visited.add(op.id);
  }

  /** Stops the body for nondeterminism. */
  broken(what: string): Error {
    this.stop ??= new StepFailure(
      "nondeterminism",
      `nondeterminism in run ${this.info.run}: ${what}; the code changed under a run in flight: gate changes with Patched (docs/FUNCTIONS.md)`,
    );
    return this.stop;
  }

  /** Adds an operation to what is sent next. */
  record(op: Omit<Operation, "seq">): void {
    if (this.pending.length === 0) this.armFlush();
    this.pending.push({ ...op, seq: this.hist.length + this.pending.length });
  }

  /** Sends what is pending in flushDelayMs. */
  private armFlush(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A failure aborts the body (a refusal), or the next flush retries.
      this.flush().catch((err: unknown) => this.log.debug("a background checkpoint failed", { err }));
    }, flushDelayMs);
  }

  /** Sends the pending operations in one checkpoint, with the suspension sp when it is set. */
  flush(sp?: Suspension): Promise<void> {
    const p = this.flushing.then(() => this.send(sp));
    this.flushing = p.catch(() => undefined);
    return p;
  }

  private async send(sp: Suspension | undefined): Promise<void> {
    const ops = this.pending.slice();
    if (ops.length === 0 && !sp) return;
    await this.hooks.checkpoint(sp ? { operations: ops, suspend: sp } : { operations: ops });
    for (const op of ops) {
      this.index(op.id, this.hist.length);
      this.hist.push(op);
    }
    this.pending = this.pending.slice(ops.length);
    if (this.pending.length > 0) this.armFlush();
    else this.stopTimer();
  }

  /**
   * Suspends the attempt for every parked suspension at once: until the
   * earliest time, and for one operation's event or run (the others
   * suspend again when the next attempt replays to them; an event for
   * them meanwhile is kept for them). The attempt's signal is aborted
   * with the outcome, which the parked branches wait for.
   */
  suspendNow(): Promise<never> {
    this.suspending ??= (async () => {
      const sp: Suspension = {};
      for (const { sp: p } of this.parked) {
        if (p.op !== undefined && sp.op === undefined) {
          sp.op = p.op;
          if (p.event !== undefined) sp.event = p.event;
          if (p.invoke !== undefined) sp.invoke = p.invoke;
        }
        if (p.until !== undefined && (sp.until === undefined || Date.parse(p.until) < Date.parse(sp.until))) sp.until = p.until;
      }
      try {
        await this.flush(sp);
      } catch (err) {
        this.hooks.abort(err);
        throw err;
      }
      const s = new FunctionSuspended();
      this.stop ??= s;
      this.hooks.abort(s);
      throw s;
    })();
    return this.suspending;
  }
}

/** A scope's context: the body's ("") or a branch's ("/<name>#<k>/<index>"), over the attempt's journal. */
class Durable implements DurableContext {
  readonly signal: AbortSignal;
  readonly info: StepInfo;
  readonly log: Logger;
  /** A name's uses so far in this scope (its ids' k). */
  private readonly uses = new Map<string, number>();

  constructor(
    private readonly j: Journal,
    private readonly scope: string,
    /** A map branch's: gives its slot to the next item waiting for one, which runs. */
    private readonly onPark?: () => void,
    /** A race branch's: aborted when another branch won. */
    signal?: AbortSignal,
  ) {
    this.signal = signal ?? j.signal;
    this.info = j.info;
    this.log = j.log;
  }

  /** The id of the next use of name in this scope: <scope>/<name>#<k>. */
  private next(name: string): string {
    const k = this.uses.get(name) ?? 0;
    this.uses.set(name, k + 1);
    return `${this.scope}/${name}#${k}`;
  }

  /**
   * Names the next use of name and returns its id and what the history
   * holds for it (empty: new); throws what ends the body.
   */
  private begin(name: string, kind: string): { id: string; recs: Operation[] } {
    if (this.j.stop) throw this.j.stop;
    if (this.signal.aborted) throw this.signal.reason;
    const id = this.next(name);
    this.j.visited.add(id);
    const recs = this.j.records(id);
    const first = recs[0];
    if (first && first.kind !== kind) throw this.j.broken(`replay reached ${kind} ${q(id)} where the history records ${first.kind} ${q(id)} (seq ${first.seq})`);
    return { id, recs };
  }

  async step<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, opts: DurableStepOptions = {}): Promise<T> {
    const j = this.j;
    const { id, recs } = this.begin(name, "step");
    const last = recs[recs.length - 1];
    if (last) {
      j.passed(`${id}.retry#`); // the waits between its tries, unread // the waits between its tries, unread
      switch (last.status) {
        case "completed":
          return (await this.resolve(last.result ?? null)) as T; // a large result is stored by reference
        case "failed":
          throw opError(last.error);
      }
      // started, no outcome: an at_most_once step is not run again.
      const why: ErrorInfo = { class: "lost", message: `at_most_once step ${id} started in an earlier attempt without recording an outcome: it is not run again` };
      j.record({ id, kind: "step", status: "failed", error: why });
      throw opError(why);
    }
    const atMostOnce = opts.atMostOnce === true;
    if (atMostOnce) j.record({ id, kind: "step", status: "started" });
    // What the function recorded so far (the previous step's result above
    // all) is durable before this step's side effects begin: a step that
    // completed never runs again; an at_most_once start is on record.
    await j.flush();
    const ran = await this.runStep(id, fn, opts, atMostOnce);
    let why = ran.why;
    let result: unknown = null;
    if (!why) {
      try {
        const text = JSON.stringify(ran.value);
        // What a replay returns: the first run returns the same.
        result = text === undefined ? null : JSON.parse(text);
      } catch (err) {
        why = { class: "fatal", message: `encoding the result of step ${q(id)}: ${message(err)}` };
      }
    }
    if (this.signal.aborted && (why || !keepsResults(this.signal.reason))) {
      // The lease is gone, the run ended, the function suspended or lost
      // a race — or the body was cut off: record nothing (it runs again).
      throw this.signal.reason;
    }
    if (why) j.record({ id, kind: "step", status: "failed", error: why });
    else j.record({ id, kind: "step", status: "completed", result });
    // An at_most_once step's outcome is durable at once: a crash before
    // the next checkpoint would fail it as lost although it ran.
    if (atMostOnce || j.pending.length >= flushOps) await j.flush();
    if (why) throw opError(why);
    return result as T;
  }

  /**
   * Runs fn until it succeeds or its error ends the step. A backoff
   * longer than an inline sleep is a sleep operation of the step,
   * <id>.retry#<n> (its result the failures so far), and suspends the
   * function; a replay restores the failures from those records and
   * waits out the last one before the next try.
   */
  private async runStep<T>(id: string, fn: (signal: AbortSignal) => Promise<T> | T, opts: DurableStepOptions, atMostOnce: boolean): Promise<{ value?: T; why?: ErrorInfo }> {
    const p = opts.retry ?? {};
    const maxAttempts = p.maxAttempts || 3;
    const retryName = `${id.slice(this.scope.length + 1)}.retry`; // <name>#<k>.retry: ids <id>.retry#<n>
    for (let failures = 0; ; ) {
      // The id a suspending backoff after this try records at; a replay
      // goes past the waits recorded before.
      let retryID = "";
      if (!atMostOnce) {
        for (;;) {
          const { id: rid, recs } = this.begin(retryName, "sleep");
          const rec = recs[0];
          if (!rec) {
            retryID = rid;
            break;
          }
          const f = (rec.result as { failures?: unknown } | null | undefined)?.failures;
          if (typeof f !== "number" || !Number.isInteger(f) || f < 1 || rec.wake_at === undefined) {
            throw this.j.broken(`the retry wait recorded for ${q(rid)} holds no failure count and wake time: ${JSON.stringify(rec)}`);
          }
          failures = f;
          await this.waitUntil(new Date(rec.wake_at));
        }
      }
      failures++;
      const t = opts.timeout === undefined ? undefined : AbortSignal.timeout(durationMs(opts.timeout));
      const signal = t ? AbortSignal.any([this.signal, t]) : this.signal;
      let err: unknown;
      try {
        return { value: await fn(signal) };
      } catch (e) {
        err = e;
      }
      let cls = classOf(err);
      let msg = message(err);
      if (t?.aborted && !this.signal.aborted) {
        cls = "timeout";
        msg = `step ${id} exceeded its timeout: ${msg}`;
      }
      if (msg === "") msg = cls;
      const why = { class: cls, message: msg };
      if (atMostOnce || !retries(p, cls) || failures >= maxAttempts || this.signal.aborted) return { why };
      const d = backoffMs(p, failures);
      if (d > inlineSleepMs) {
        // Too long to hold the lease: the function suspends until the
        // next try, which a later attempt runs.
        const wake = new Date(this.j.now() + d).toISOString();
        this.j.record({ id: retryID, kind: "sleep", status: "completed", wake_at: wake, result: { failures } });
        return this.suspend({ until: wake });
      }
      try {
        await abortableSleep(d, this.signal);
      } catch {
        return { why };
      }
    }
  }

  sleep(name: string, d: Duration): Promise<void> {
    const ms = durationMs(d);
    return this.sleepTo(name, () => new Date(this.j.now() + ms));
  }

  sleepUntil(name: string, t: Date): Promise<void> {
    return this.sleepTo(name, () => t);
  }

  private async sleepTo(name: string, end: () => Date): Promise<void> {
    const { id, recs } = this.begin(name, "sleep");
    let wake: Date;
    const rec = recs[0];
    if (rec?.wake_at !== undefined) {
      wake = new Date(rec.wake_at);
    } else {
      wake = end();
      this.j.record({ id, kind: "sleep", status: "completed", wake_at: wake.toISOString() });
    }
    return this.waitUntil(wake);
  }

  /** Waits until wake: holding the lease up to an inline sleep, else suspended. */
  private async waitUntil(wake: Date): Promise<void> {
    const left = wake.getTime() - this.j.now();
    if (left <= 0) return;
    if (left <= inlineSleepMs) return abortableSleep(left, this.signal);
    return this.suspend({ until: wake.toISOString() });
  }

  /**
   * Ends the attempt as sp says, sending what is pending: the body must
   * end (the error thrown says so). In a branch, it waits until no other
   * branch runs: the attempt suspends once for all of them.
   */
  private async suspend(sp: Suspension): Promise<never> {
    const j = this.j;
    j.parked.push({ scope: this.scope, sp });
    j.running--;
    this.onPark?.(); // its slot to a branch waiting for one, which runs
    if (j.running === 0) return j.suspendNow();
    await aborted(this.signal);
    if (j.stop) throw j.stop;
    j.unpark(this.scope); // its own signal was aborted (a race lost), not the attempt
    throw this.signal.reason;
  }

  /** A branch's end: the last scope running suspends the attempt for the parked ones. */
  private leave(): void {
    const j = this.j;
    j.running--;
    if (j.running === 0 && j.parked.length > 0) j.suspendNow().catch(() => undefined); // the parked branches learn the outcome from the signal
  }

  async waitForEvent<T = unknown>(name: string, event: string, opts: { timeout?: Duration } = {}): Promise<T> {
    const op = await this.waitOp(name, event, opts);
    return (await this.resolve(op.result ?? null)) as T; // an event's payload may be stored by reference
  }

  async waitForUpdate<T = unknown>(name: string, update: string, opts: { timeout?: Duration } = {}): Promise<Received<T>> {
    const op = await this.waitOp(name, update, opts);
    return { id: op.update ?? "", input: (await this.resolve(op.result ?? null)) as T };
  }

  async reply(u: Received<unknown>, answer: unknown): Promise<void> {
    const { id, recs } = this.begin("reply", "reply");
    if (recs.length === 0) this.j.record({ id, kind: "reply", status: "completed", result: answer ?? null, update: u.id });
    await this.j.flush();
  }

  /** waitForEvent's operation: its completed record, once the engine recorded the event. */
  private async waitOp(name: string, event: string, opts: { timeout?: Duration }): Promise<Operation> {
    const { id, recs } = this.begin(name, "wait");
    let deadline: string | undefined;
    if (recs.length === 0) {
      const ms = opts.timeout === undefined ? 0 : durationMs(opts.timeout);
      if (ms > 0) deadline = new Date(this.j.now() + ms).toISOString();
      this.j.record(deadline === undefined ? { id, kind: "wait", status: "started" } : { id, kind: "wait", status: "started", wake_at: deadline });
    } else {
      deadline = recs[0]!.wake_at;
    }
    const outcome = lastOutcome(recs);
    // The engine's clock decides a timeout: this attempt was claimed past
    // the deadline, so the engine takes no event for the wait any more.
    const l = this.j.hooks.lease;
    const claimed = new Date(l.expires_at).getTime() - l.lease_ttl_ms;
    if (!outcome && recs.length > 0 && deadline !== undefined && claimed >= new Date(deadline).getTime()) {
      const why: ErrorInfo = { class: "timeout", message: `no event ${q(event)} by ${rfc3339(new Date(deadline))} (wait ${id})` };
      this.j.record({ id, kind: "wait", status: "failed", error: why });
      throw opError(why);
    }
    if (outcome?.status === "completed") return outcome;
    if (outcome) throw opError(outcome.error);
    return this.suspend(deadline === undefined ? { event, op: id } : { event, op: id, until: deadline });
  }

  /** A recorded result, or the value it references when it is stored by reference (one too large for the run record: a step's result, an event's payload, an invoked run's output), read through the lease. */
  private async resolve(v: unknown): Promise<unknown> {
    const read = this.j.hooks.payload;
    if (!read || !asPayloadRef(v)) return v;
    try {
      return await read(v);
    } catch (err) {
      throw new RetryableError(`reading a recorded result stored by reference: ${message(err)}`, { cause: err });
    }
  }

  async invoke<T = unknown>(name: string, call: Call): Promise<T> {
    let input: unknown;
    try {
      const text = JSON.stringify(call.input ?? null);
      input = text === undefined ? null : JSON.parse(text);
    } catch (err) {
      throw new FatalError(`encoding the input of invoke ${q(name)}: ${message(err)}`, { cause: err });
    }
    const { id, recs } = this.begin(name, "invoke");
    if (recs.length === 0) this.j.record({ id, kind: "invoke", status: "started" });
    const last = lastOutcome(recs);
    if (last?.status === "failed") throw opError(last.error);
    if (last) return (await this.resolve(last.result ?? null)) as T; // a large output is stored by reference
    const inv: Invocation = { workflow: call.workflow, input };
    if (call.version) inv.version = call.version;
    return this.suspend({ op: id, invoke: inv });
  }

  async map<In, Out>(name: string, items: readonly In[], fn: (ctx: DurableContext, item: In, index: number) => Promise<Out> | Out, opts: MapOptions = {}): Promise<Out[]> {
    const j = this.j;
    if (j.stop) throw j.stop;
    if (this.signal.aborted) throw this.signal.reason;
    const base = this.next(name);
    const n = items.length;
    if (n === 0) return [];
    const limit = opts.limit === undefined || opts.limit <= 0 || opts.limit > n ? n : Math.max(1, Math.floor(opts.limit));
    const ends: ({ ok: true; value: Out } | { ok: false; err: unknown })[] = new Array(n);
    let next = 0; // the next item to start
    let left = n;
    let allEnded!: () => void;
    const done = new Promise<void>((resolve) => (allEnded = resolve));
    // take starts the next item waiting for a slot, counted as running
    // from then on; called when a slot is free (at the start, or when a
    // branch ended or parked), so a branch waiting for a slot never counts
    // as running and the barrier is never held by one.
    const take = (): void => {
      if (next === n) return;
      const i = next++;
      j.running++;
      void branch(i);
    };
    const branch = async (i: number): Promise<void> => {
      let held = true;
      const give = () => {
        if (held) {
          held = false;
          take();
        }
      };
      await undefined; // starts after its caller: a chain of parks does not nest
      try {
        ends[i] = { ok: true, value: await fn(new Durable(j, `${base}/${i}`, give), items[i]!, i) };
      } catch (err) {
        ends[i] = { ok: false, err };
      }
      give(); // hand the slot on before leaving
      this.leave();
      if (--left === 0) allEnded();
    };
    j.running--; // the caller waits for the branches
    for (let k = 0; k < limit; k++) take();
    await done;
    j.running++;
    if (j.stop) throw j.stop;
    const out: Out[] = [];
    for (const [i, e] of ends.entries()) {
      if (!e.ok) throw this.within(e.err, `${name} item ${i}`);
      out.push(e.value);
    }
    return out;
  }

  async race<T>(name: string, ...branches: ((ctx: DurableContext) => Promise<T> | T)[]): Promise<{ index: number; value: T }> {
    const j = this.j;
    const { id, recs } = this.begin(name, "value");
    const n = branches.length;
    if (n === 0) return { index: -1, value: undefined as T };
    const scope = (i: number) => `${id}/${i}`;
    if (recs.length > 0) {
      // Decided: the losers' records stay unread.
      const w = recs[0]!.result;
      if (typeof w !== "number" || !Number.isInteger(w) || w < 0 || w >= n) throw j.broken(`race ${q(id)} recorded winner ${JSON.stringify(w)} of ${n} branches`);
      j.lost(id, scope(w));
      return { index: w, value: await branches[w]!(new Durable(j, scope(w), undefined, this.signal)) };
    }
    const ctrls = branches.map(() => new AbortController()); // all made before any branch can cancel another
    let winner = -1;
    let outcome: { ok: true; value: T } | { ok: false; err: unknown } | undefined;
    j.running += n - 1; // the caller waits for the branches
    const run = async (i: number): Promise<void> => {
      const signal = AbortSignal.any([this.signal, ctrls[i]!.signal]);
      let end: { ok: true; value: T } | { ok: false; err: unknown };
      try {
        end = { ok: true, value: await branches[i]!(new Durable(j, scope(i), undefined, signal)) };
      } catch (err) {
        end = { ok: false, err };
      }
      if (winner < 0 && !(!end.ok && end.err instanceof FunctionSuspended) && !j.stop && !signal.aborted) {
        winner = i;
        outcome = end;
        j.record({ id, kind: "value", status: "completed", result: i });
        for (let k = 0; k < n; k++) {
          if (k === i) continue;
          j.unpark(scope(k)); // before this branch leaves: no loser counts as parked
          ctrls[k]!.abort(new RaceLost());
        }
        j.lost(id, scope(i));
      }
      this.leave();
    };
    await Promise.all(branches.map((_, i) => run(i)));
    for (const c of ctrls) c.abort(new RaceLost()); // the signals made of them are let go
    j.running++;
    if (j.stop) throw j.stop;
    if (winner < 0 || !outcome) throw this.signal.reason ?? new FatalError(`race ${q(id)} ended without a winner`);
    if (!outcome.ok) throw outcome.err;
    return { index: winner, value: outcome.value };
  }

  parallel<T extends unknown[]>(name: string, ...branches: { [K in keyof T]: (ctx: DurableContext) => Promise<T[K]> | T[K] }): Promise<T> {
    return this.map(name, branches as readonly ((ctx: DurableContext) => unknown)[], (ctx, b) => b(ctx)) as Promise<T>;
  }

  /** err, a branch's, as the error of its map: what prefixes its message, its class kept; what ends the attempt (or the run: ContinueAsNew) as is. */
  private within(err: unknown, what: string): unknown {
    if ((this.signal.aborted && err === this.signal.reason) || err instanceof ContinueAsNew) return err;
    const msg = `${what}: ${message(err)}`;
    if (err instanceof RetryableError) return new RetryableError(msg, { cause: err });
    if (err instanceof StepFailure) return new StepFailure(err.class, msg, { cause: err });
    if (err instanceof Error) return new FatalError(msg, { cause: err });
    return err;
  }

  /** Records what gen returns under name, or returns what was recorded, checked by valid; undefined once the body must end. */
  private value<T>(name: string, gen: () => T, valid: (v: unknown) => v is T, what: string): T | undefined {
    let id: string;
    let recs: Operation[];
    try {
      ({ id, recs } = this.begin(name, "value"));
    } catch {
      return undefined; // the driver reports what ended the body
    }
    if (recs.length > 0) {
      const v = recs[0]!.result;
      if (valid(v)) return v;
      this.j.broken(`the value recorded for ${q(id)} does not decode into ${what}: ${JSON.stringify(v)}`);
      return undefined;
    }
    const v = gen();
    this.j.record({ id, kind: "value", status: "completed", result: v });
    return v;
  }

  now(): Date {
    const iso = this.value("now", () => new Date(this.j.now()).toISOString(), (v): v is string => typeof v === "string" && !Number.isNaN(Date.parse(v)), "a time");
    return iso === undefined ? new Date(0) : new Date(iso);
  }

  random(): number {
    return this.value("random", () => Math.random(), (v): v is number => typeof v === "number", "a number") ?? 0;
  }

  uuid(): string {
    return this.value("uuid", () => randomUUID(), (v): v is string => typeof v === "string", "a string") ?? "";
  }

  continueAsNew(input: unknown): never {
    let v: unknown;
    try {
      const text = JSON.stringify(input ?? null);
      v = text === undefined ? null : JSON.parse(text);
    } catch (err) {
      throw new FatalError(`encoding the input of the run to continue as: ${message(err)}`, { cause: err });
    }
    throw new ContinueAsNew(v);
  }

  patched(id: string): boolean {
    let key: string;
    let recs: Operation[];
    try {
      ({ id: key, recs } = this.begin(`patch:${id}`, "patch"));
    } catch {
      return false;
    }
    if (recs.length > 0) return true;
    if (this.j.hist.some((op) => !this.j.visited.has(op.id))) return false; // replaying what the code before the change recorded
    this.j.record({ id: key, kind: "patch", status: "completed" });
    return true;
  }
}

/**
 * Whether a function whose signal was aborted with reason still records
 * what its steps returned: a draining worker and an attempt's timeout end
 * the attempt after one more checkpoint (drive), the other reasons end it
 * without one.
 */
function keepsResults(reason: unknown): boolean {
  return reason instanceof ShutdownError || reason instanceof AttemptTimeoutError;
}

/** The outcome among an operation's records (completed or failed), or undefined when it has only started. */
function lastOutcome(recs: Operation[]): Operation | undefined {
  const last = recs[recs.length - 1];
  return last && last.status !== "started" ? last : undefined;
}

/** Resolves once signal is aborted. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** The error a failed operation is thrown with: its class and message. */
function opError(e: ErrorInfo | undefined): Error {
  if (!e) return new FatalError("a failed operation without its error");
  switch (e.class) {
    case "fatal":
      return new FatalError(e.message);
    case "retryable":
      return new RetryableError(e.message);
  }
  try {
    return new StepFailure(e.class, e.message);
  } catch {
    return new FatalError(e.message); // a class this SDK cannot name
  }
}

/** Whether a failure of cls may be retried under p: every class but the engine's final ones and p's non-retryable ones (cairn.RetryPolicy.Retries). */
function retries(p: RetryPolicy, cls: string): boolean {
  switch (cls) {
    case "fatal":
    case "render_error":
    case "lost":
    case "dead_lettered":
    case "output_too_large":
    case "nondeterminism":
      return false;
  }
  return !(p.nonRetryable ?? []).includes(cls);
}

/** The wait before the next try after failures failures under p (its defaults applied), jittered by ±20% (cairn.RetryPolicy.Backoff). */
function backoffMs(p: RetryPolicy, failures: number): number {
  const initial = p.initialBackoff === undefined ? 1000 : durationMs(p.initialBackoff) || 1000;
  const max = p.maxBackoff === undefined ? 300_000 : durationMs(p.maxBackoff) || 300_000;
  const mult = p.multiplier || 2;
  return Math.min(initial * mult ** (failures - 1), max) * (0.8 + 0.4 * Math.random());
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const goUnits: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Duration in milliseconds: a number as is, a Go duration string ("1h30m", "250ms") parsed. */
export function durationMs(d: Duration): number {
  if (typeof d === "number") {
    if (!Number.isFinite(d) || d < 0) throw new TypeError(`cairn: invalid duration ${d}`);
    return d;
  }
  const s = d.trim();
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let ms = 0;
  let at = 0;
  while (at < s.length) {
    re.lastIndex = at;
    const m = re.exec(s);
    if (!m) throw new TypeError(`cairn: invalid duration ${JSON.stringify(d)}`);
    ms += Number(m[1]) * goUnits[m[2]!]!;
    at = re.lastIndex;
  }
  if (at === 0) throw new TypeError(`cairn: invalid duration ${JSON.stringify(d)}`);
  return ms;
}

/** t as RFC 3339 in UTC to the second, as Go's time.RFC3339 formats it. */
function rfc3339(t: Date): string {
  return t.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** s quoted, as Go's %q quotes it (for these messages' plain ids). */
const q = (s: string) => JSON.stringify(s);

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

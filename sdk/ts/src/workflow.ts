// Workflow definitions: a DAG of tasks (bodies run by workers), waits
// (completed by events) and sleeps, registered by the worker.
import type { Schemas } from "./client.js";
import { type FunctionBody, type FunctionOptions, functionHandler } from "./function.js";
import { kindOptions } from "./kinds.gen.js";
import type { StepContext } from "./worker.js";

/** A duration: milliseconds (a number) or a Go duration string ("30s", "1h30m"). The wire form is the string. */
export type Duration = number | string;

/** The wire form of a duration in a definition: a Go duration string. */
export function duration(d: Duration): string {
  if (typeof d === "string") return d;
  if (!Number.isFinite(d) || d < 0) throw new TypeError(`cairn: invalid duration ${d}`);
  return `${Math.round(d)}ms`;
}

export interface RetryPolicy {
  /** Default 3. */
  maxAttempts?: number;
  /** Default 1s. */
  initialBackoff?: Duration;
  /** Default 5m. */
  maxBackoff?: Duration;
  /** Default 2. */
  multiplier?: number;
  /** Failure classes never retried. */
  nonRetryable?: string[];
  /** At-most-once only: classes retried even after the body started. */
  retryAfterStart?: string[];
}

export interface StepOptions {
  /** Start once these steps completed. */
  after?: string[];
  /** Input template: JSON whose strings may hold ${CEL} over input, state, steps.<id>.output, run. Default: the run's input. */
  input?: unknown;
  retry?: RetryPolicy;
  /** Task: the longest one attempt may run. Wait: how long to wait for the event. */
  timeout?: Duration;
  /** Once the body started, it never runs again. */
  atMostOnce?: boolean;
  /** Lost leases before the step is dead-lettered (default 5). */
  maxDeliveries?: number;
  /** Task: at most `limit` attempts hold a lease at once among those whose `key` template (e.g. "${input.customer}") renders equal; no key: one limit for the step. */
  concurrency?: { key?: string; limit: number };
  /** Task: at most `limit` attempts handed out per `period` per rendered key, evenly spaced unless `burst` > 1; attempts beyond wait. */
  rateLimit?: { key?: string; limit: number; period: Duration; burst?: number };
  /** Task: overrides the run's priority, in [-100, 100]; higher is offered first. */
  priority?: number;
  /** Task, map, function: offered only to workers registered with every one of these labels (Worker's labels option). */
  requiresLabels?: Record<string, string>;
  /** Task: a result cache. An attempt whose key (CEL over the step's rendered input, as input; default the whole input) has an entry younger than ttl (default 24h, at most 720h) is completed from it without a worker, marked cached; a miss runs the step and its output (up to 64 KiB) becomes the entry. */
  cache?: { key?: string; ttl?: Duration };
  /** Task, function: routes back to an earlier step (`to`, one this step runs after) when the step completes and `if` (CEL over input, state, run, steps.<id>.output and .visits) holds: `to` and every step between run again, a new visit. Tried in order. */
  next?: { to: string; if: string }[];
  /** Task, function with next: the most visits of this step (default 10); a route past it fails the run with class loop_limit. */
  maxVisits?: number;
  /** Map steps: most items running at once (default 100). */
  maxConcurrency?: number;
  /** Map steps: items that may fail without failing the step (their outputs are null). */
  toleratedFailures?: number;
  /** Map steps: the share of items, in percent, that may fail. */
  toleratedFailurePercent?: number;
  /** Child steps: the child workflow's version (default its newest). */
  childVersion?: string;
  /** Wait steps: take only the events for which this CEL condition over event (name, id, payload), input, state, steps and run holds. */
  if?: string;
  /** Wait steps: the step, after the wait, whose output answers an update the wait takes (client.sendUpdate); the wait's own output (the update's input) by default. */
  answer?: string;
}

/** A step body: the rendered input in, the output (any JSON value) out. */
export type Handler<In = any, Out = unknown> = (ctx: StepContext, input: In) => Promise<Out> | Out;

export interface WorkflowOptions {
  name: string;
  version: string;
  description?: string;
  /** Default run deadline, from start. */
  deadline?: Duration;
  /** Default budget of each run (a start may give its own): a run whose usage goes over it fails with class budget_exceeded. */
  budget?: Schemas["Budget"];
  /** Runs its triggers start wait for a quiet spell per key (CEL over event): a run starts period after the key's last event, with its payload, at the latest timeout after the first. */
  debounce?: { key?: string; period: Duration; timeout?: Duration };
  /** Events its triggers match gather per key (CEL over event) into runs whose input is the list of payloads: at maxSize events or timeout after the first. */
  batch?: { key?: string; maxSize: number; timeout: Duration };
  /** A running run is cancelled by a published event of one of these names whose if (CEL over event and the run's input, state, run) holds; timeout: only within that long of its start. */
  cancelOn?: { event: string; if?: string; timeout?: Duration }[];
  /** One running run per rendered key (a template over the input; "" for one per workflow): "skip" answers the running run (skipped: true), "cancel_running" cancels it. */
  singleton?: { key?: string; mode: "skip" | "cancel_running" };
  /** How a state key folds what steps write (default replace): append, sum, max, min, merge. Parallel writers of the key then all count. */
  reducers?: Record<string, "replace" | "append" | "sum" | "max" | "min" | "merge">;
  /** Limits on the task attempts of all runs holding a lease at once: per rendered key, or without key one global limit (at most 4). */
  concurrency?: { key?: string; limit: number }[];
  /** The payloads are encrypted by the SDKs (a codec): templates may pass encrypted values whole, not read inside them. */
  encrypted?: boolean;
  /** Encrypted workflows: top-level input and state keys left in the clear. */
  clear?: string[];
}

type Step = Schemas["Step"];

export class WorkflowDef {
  readonly name: string;
  readonly version: string;
  readonly handlers = new Map<string, Handler>();
  private readonly steps: Step[] = [];
  private readonly onFailureSteps: Step[] = [];
  private readonly triggers: Schemas["Trigger"][] = [];
  private compensating = false;
  private readonly opts: WorkflowOptions;

  constructor(opts: WorkflowOptions) {
    this.opts = opts;
    this.name = opts.name;
    this.version = opts.version;
  }

  /** A step whose body runs on a worker. */
  task<In = any, Out = unknown>(id: string, handler: Handler<In, Out>, opts: StepOptions = {}): this {
    this.handlers.set(id, handler as Handler);
    // kind is left out for a task (the default), as the Go SDK does:
    // the engine compares definitions as sent, so both SDKs send one form.
    return this.add({ id }, opts);
  }

  /**
   * A task whose body other workers serve (another SDK, another
   * deployment): declared so this worker registers the same definition,
   * and failed as unservable if offered here (the engine then offers it to
   * another worker without spending retry budget).
   */
  remoteTask(id: string, opts: StepOptions = {}): this {
    return this.add({ id }, opts);
  }

  /**
   * A durable function step: body runs on a worker under a lease like a
   * task's, and its operations are checkpointed (DurableContext); a later
   * attempt replays it. Its input is the step's rendered input (default:
   * the run's). defineFunction makes a workflow of one.
   */
  function<In = any, Out = unknown>(id: string, body: FunctionBody<In, Out>, opts: FunctionOptions = {}): this {
    this.handlers.set(id, functionHandler(body as FunctionBody));
    return this.add({ id, kind: "function" }, opts);
  }

  /** A step completed by the event name sent to the run; its payload is the output. */
  wait(id: string, event: string, opts: StepOptions = {}): this {
    return this.add({ id, kind: "wait", event }, opts);
  }

  /** A step completed by the first of several events sent to the run (matching opts.if); its output is {event, id, payload}. */
  waitAny(id: string, events: string[], opts: StepOptions = {}): this {
    return this.add({ id, kind: "wait", events: [...events] }, opts);
  }

  /**
   * A trigger: an event named event published (Client.publish) starts a
   * run of the workflow's newest registered version, with the payload as
   * input, when cond (CEL over event: name, id, payload) holds; no cond:
   * every event of the name.
   */
  on(event: string, cond?: string): this {
    this.triggers.push(cond ? { event, if: cond } : { event });
    return this;
  }

  /** A step that waits d (output null). */
  sleep(id: string, d: Duration, opts: StepOptions = {}): this {
    return this.add({ id, kind: "sleep", duration: duration(d) }, opts);
  }

  /**
   * A map step: handler runs once per element of the array `items` (a CEL
   * expression) renders, at most maxConcurrency at a time; the output is
   * the outputs in input order. The input template sees item and index;
   * without one a body's input is its element.
   */
  map<In = any, Out = unknown>(id: string, items: string, handler: Handler<In, Out>, opts: StepOptions = {}): this {
    this.handlers.set(id, handler as Handler);
    return this.add({ id, kind: "map", items }, opts);
  }

  /** A step that starts a run of workflow and ends with it (its output, or its error). */
  child(id: string, workflow: string, opts: StepOptions = {}): this {
    return this.add({ id, kind: "child", workflow }, opts);
  }

  /** A compensation step (saga): a task run only when the run fails, after the on_failure steps in opts.after. */
  onFailure<In = any, Out = unknown>(id: string, handler: Handler<In, Out>, opts: StepOptions = {}): this {
    this.compensating = true;
    try {
      return this.task(id, handler, opts);
    } finally {
      this.compensating = false;
    }
  }

  private add(s: Step, o: StepOptions): this {
    if (this.steps.some((x) => x.id === s.id) || this.onFailureSteps.some((x) => x.id === s.id))
      throw new Error(`cairn: workflow ${this.name}: step ${s.id} defined twice`);
    if (o.after?.length) s.after = o.after;
    if (o.input !== undefined) s.input = sortKeys(o.input);
    if (o.retry) {
      const r = o.retry;
      s.retry = {
        max_attempts: r.maxAttempts,
        initial_backoff: r.initialBackoff === undefined ? undefined : duration(r.initialBackoff),
        max_backoff: r.maxBackoff === undefined ? undefined : duration(r.maxBackoff),
        multiplier: r.multiplier,
        non_retryable: r.nonRetryable,
        retry_after_start: r.retryAfterStart,
      };
    }
    if (o.timeout !== undefined) {
      if (s.kind === "wait") s.wait_timeout = duration(o.timeout);
      else s.timeout = duration(o.timeout);
    }
    if (o.atMostOnce) s.delivery = "at_most_once";
    if (o.maxDeliveries !== undefined) s.max_deliveries = o.maxDeliveries;
    if (o.concurrency) s.concurrency = { key: o.concurrency.key, limit: o.concurrency.limit };
    if (o.rateLimit) {
      const r = o.rateLimit;
      s.rate_limit = { key: r.key, limit: r.limit, period: duration(r.period), burst: r.burst };
    }
    if (o.priority !== undefined) s.priority = o.priority;
    if (o.requiresLabels) s.requires_labels = { ...o.requiresLabels };
    if (o.cache) s.cache = { key: o.cache.key, ttl: o.cache.ttl === undefined ? undefined : duration(o.cache.ttl) };
    if (o.next?.length) s.next = o.next.map((r) => ({ to: r.to, if: r.if }));
    if (o.maxVisits !== undefined) s.max_visits = o.maxVisits;
    if (o.maxConcurrency !== undefined) s.max_concurrency = o.maxConcurrency;
    if (o.toleratedFailures !== undefined) s.tolerated_failures = o.toleratedFailures;
    if (o.toleratedFailurePercent !== undefined) s.tolerated_failure_percent = o.toleratedFailurePercent;
    if (o.childVersion !== undefined) s.child_version = o.childVersion;
    if (o.if !== undefined) s.if = o.if;
    if (o.answer !== undefined) s.answer = o.answer;
    checkKindOptions(s, `cairn: workflow ${this.name}: step ${s.id}`);
    (this.compensating ? this.onFailureSteps : this.steps).push(s);
    return this;
  }

  /** The definition the worker registers (the API's Workflow). */
  definition(): Schemas["Workflow"] {
    return {
      name: this.name,
      version: this.version,
      description: this.opts.description,
      deadline: this.opts.deadline === undefined ? undefined : duration(this.opts.deadline),
      concurrency: this.opts.concurrency?.map((c) => ({ key: c.key, limit: c.limit })),
      ...(this.opts.budget ? { budget: { ...this.opts.budget } } : {}),
      ...(this.opts.cancelOn?.length
        ? { cancel_on: this.opts.cancelOn.map((c) => ({ event: c.event, if: c.if, timeout: c.timeout === undefined ? undefined : duration(c.timeout) })) }
        : {}),
      ...(this.opts.singleton ? { singleton: { ...this.opts.singleton } } : {}),
      ...(this.opts.debounce
        ? {
            debounce: {
              key: this.opts.debounce.key,
              period: duration(this.opts.debounce.period),
              timeout: this.opts.debounce.timeout === undefined ? undefined : duration(this.opts.debounce.timeout),
            },
          }
        : {}),
      ...(this.opts.batch
        ? { batch: { key: this.opts.batch.key, max_size: this.opts.batch.maxSize, timeout: duration(this.opts.batch.timeout) } }
        : {}),
      ...(this.opts.reducers ? { reducers: { ...this.opts.reducers } } : {}),
      steps: this.steps.map((s) => ({ ...s })),
      ...(this.onFailureSteps.length ? { on_failure: this.onFailureSteps.map((s) => ({ ...s })) } : {}),
      ...(this.triggers.length ? { on: this.triggers.map((t) => ({ ...t })) } : {}),
      ...(this.opts.encrypted ? { encrypted: true } : {}),
      ...(this.opts.clear?.length ? { clear: [...this.opts.clear] } : {}),
    };
  }

  /** The top-level input and state keys an encrypted workflow leaves in the clear. */
  clearKeys(): Set<string> {
    return new Set(this.opts.clear ?? []);
  }
}

/** The step fields every kind takes; the others are in kindOptions. */
const commonStepFields = new Set(["id", "kind", "after", "input", "when"]);

/**
 * Refuses a step that sets an option its kind does not take, with the
 * engine's message ("retry applies to task and map steps only"): the
 * table is the engine's, generated from the spec (kinds.gen.ts).
 */
export function checkKindOptions(s: Step, where: string): void {
  const kind = s.kind ?? "task";
  const takes = kindOptions[kind];
  if (!takes) throw new Error(`${where}: unknown kind ${kind}`);
  for (const [field, value] of Object.entries(s)) {
    if (value === undefined || commonStepFields.has(field) || takes.includes(field)) continue;
    const takers = Object.keys(kindOptions).filter((k) => kindOptions[k]?.includes(field));
    const list = takers.length < 2 ? takers.join("") : `${takers.slice(0, -1).join(", ")} and ${takers[takers.length - 1]}`;
    throw new Error(`${where}: ${field} applies to ${list} steps only`);
  }
}

/** Defines a workflow: `defineWorkflow({name, version}).task(…).wait(…).sleep(…)`. */
export function defineWorkflow(opts: WorkflowOptions): WorkflowDef {
  return new WorkflowDef(opts);
}

/**
 * A JSON value with every object's keys sorted, as Go encodes maps: the
 * engine keeps a definition as sent and refuses a re-registration with
 * other content, so a TypeScript and a Go worker of one workflow must send
 * the same bytes.
 */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

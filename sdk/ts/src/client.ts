// The client: start, read, wait for, list, signal and cancel runs, over
// the client generated from the committed OpenAPI document.
import createClient, { type Client as FetchClient } from "openapi-fetch";

import { type Keyring, open, sealMap, sealTop } from "./codec.js";
import { Store } from "./store.js";
import { APIError } from "./errors.js";
import { durationMs } from "./function.js";
import { resolveRun, resolveRunValue } from "./payloads.js";
import { type StreamEvent, type StreamTransport, streamRun } from "./stream.js";
import type { components, paths } from "./schema.gen.js";
import type { Duration } from "./workflow.js";

export type Schemas = components["schemas"];
export type Run = Schemas["Run"];
export type RunProgress = Schemas["RunProgress"];
export type RunSummary = Schemas["RunSummary"];
export type RunPage = Schemas["RunPage"];
export type RunStatus = Run["status"];
export type StepView = Schemas["StepView"];
export type JournalEntry = Schemas["JournalEntry"];
export type EventResult = Schemas["EventResult"];
/** An update sent to a run and, once it is in, its answer (status accepted, answered or failed). */
export type Update = Schemas["Update"];
export type PublishResult = Schemas["PublishResult"];
/** A test server's clock: its time (now) and how far tests moved it (offset_ms). */
export type TestClock = Schemas["ClockResponse"];
export type Lease = Schemas["Lease"];
export type Usage = Schemas["Usage"];
export type WorkflowDefinition = Schemas["Workflow"];
export type WorkerInfo = Schemas["WorkerInfo"];
export type Schedule = Schemas["Schedule"];
export type SchedulePage = Schemas["SchedulePage"];
export type BackfillResult = Schemas["BackfillResult"];

/** The generated openapi-fetch client, for calls the SDK does not wrap. */
export type API = FetchClient<paths, "application/json">;

export interface ClientOptions {
  /** Base URL of the server [$CAIRN_SERVER, else http://127.0.0.1:8080]. */
  server?: string;
  /** API key, sent as Authorization: Bearer <key> [$CAIRN_KEY]. */
  key?: string;
  /** fetch to use (tests inject faults with it) [globalThis.fetch]. */
  fetch?: typeof fetch;
  /** Encrypts run inputs, state and event payloads, and decodes what the client reads (codec.ts). */
  codec?: Keyring;
}

export interface StartOptions {
  input?: unknown;
  /** Default: the newest registered version. */
  version?: string;
  /** run.correlation in templates. */
  correlation?: string;
  /** Starting again with the same key returns the first run (`existed` true). */
  idempotencyKey?: string;
  /** The run times out then (a Date), or this many milliseconds from now (a number). */
  deadline?: Date | number;
  /** Initial run state. */
  state?: Record<string, unknown>;
  /** The run's priority in [-100, 100] (default 0): higher is offered first. */
  priority?: number;
  /** Replaces the workflow's budget for this run. */
  budget?: Schemas["Budget"];
  /** Search attributes (at most 16): a string, number, boolean or Date each; list filters on them (ListOptions.attr). */
  attributes?: Attributes;
}

/** Search attributes: name to a string, number, boolean or time (a Date, or an RFC 3339 string); null removes one from a step. */
export type Attributes = Record<string, string | number | boolean | Date | null>;

/** A new schedule's optional fields. */
export interface ScheduleOptions {
  /** Names the schedule; default a generated id. */
  id?: string;
  /** Version to start; default the newest at each tick. */
  version?: string;
  /** IANA time zone the expression is read in; default UTC. */
  timeZone?: string;
  /** Input of every run, any JSON value; encrypted like a start's with a codec. */
  input?: unknown;
  /** What a tick does while the previous run still runs: skip (default), allow, cancel_previous. */
  overlap?: "skip" | "allow" | "cancel_previous";
  /** Creates the schedule paused. */
  paused?: boolean;
  description?: string;
}

export interface ListOptions {
  workflow?: string;
  status?: RunStatus;
  /** Conditions on search attributes, all of which must hold: "name:value", "name>value", "name>=value", "name<value", "name<=value". Runs come by the first one's value, newest first within one. */
  attr?: string[];
  limit?: number;
  cursor?: string;
}

export interface WaitOptions {
  /** Called with each change of the run's progress while it runs (status and per-step progress only). */
  onProgress?: (p: RunProgress) => void;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
export { sleep as _sleep };

/** Throws an APIError for a refusal, or returns the data of a 2xx. */
export function unwrap<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  if (r.response.ok) return undefined as T;
  throw new APIError(r.response.status, r.error as ConstructorParameters<typeof APIError>[1]);
}

/** Connection refused before the request went out, or a 503/429: nothing was applied. */
export function temporary(err: unknown): boolean {
  if (err instanceof APIError) return err.temporary;
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  return code === "ECONNREFUSED";
}

export class Client {
  readonly api: API;
  readonly server: string;
  readonly codec: Keyring | undefined;
  private readonly clearCache = new Map<string, Set<string>>();
  /** How streams and progress reach the server (stream.ts). */
  readonly transport: StreamTransport;

  constructor(opts: ClientOptions = {}) {
    this.codec = opts.codec;
    this.server = (opts.server ?? process.env.CAIRN_SERVER ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    const key = opts.key ?? process.env.CAIRN_KEY;
    const base = opts.fetch ?? globalThis.fetch;
    // Sends a call again (up to 4 sends, 100 ms doubling, honouring
    // Retry-After up to 5 s) only when nothing was applied: a 503 or 429,
    // or a connection refused before the request went out. A GET changes
    // nothing whatever its outcome: it is sent again after a server error
    // (500, 502, 504: a store read that failed) or a lost connection too.
    const retrying: typeof fetch = async (input, init) => {
      let delay = 100;
      const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
      const safe = method === "GET" || method === "HEAD";
      for (let send = 1; ; send++) {
        const req = input instanceof Request ? input.clone() : input;
        try {
          const res = await base(req, init);
          const again = res.status === 503 || res.status === 429 || (safe && (res.status === 500 || res.status === 502 || res.status === 504));
          if (!again || send === 4) return res;
          const ra = Number(res.headers.get("retry-after"));
          const raMs = Number(res.headers.get("retry-after-ms")); // finer, when sent
          await res.body?.cancel();
          await sleep(raMs > 0 ? Math.min(raMs, 5000) : Number.isFinite(ra) && ra > 0 ? Math.min(ra * 1000, 5000) : delay, init?.signal ?? (input instanceof Request ? input.signal : undefined));
        } catch (err) {
          const aborted = (err as { name?: string })?.name === "AbortError" || (err as { name?: string })?.name === "TimeoutError";
          if (!(temporary(err) || (safe && !aborted && err instanceof TypeError)) || send === 4) throw err;
          await sleep(delay, init?.signal ?? undefined);
        }
        delay *= 2;
      }
    };
    this.transport = { server: this.server, headers: key ? { Authorization: `Bearer ${key}` } : {}, fetch: base };
    this.api = createClient<paths, "application/json">({
      baseUrl: this.server,
      fetch: retrying,
      headers: key ? { Authorization: `Bearer ${key}` } : {},
    });
  }

  /** Starts a run of workflow. With an idempotency key, starting again returns the first run and `existed` true. */
  async start(workflow: string, opts: StartOptions = {}): Promise<{ run: Run; existed: boolean; skipped?: boolean }> {
    const deadline =
      opts.deadline === undefined ? undefined : new Date(typeof opts.deadline === "number" ? Date.now() + opts.deadline : opts.deadline).toISOString();
    let input = opts.input;
    let state = opts.state;
    if (this.codec && (input !== undefined || state !== undefined)) {
      const clear = await this.clearKeys(workflow, opts.version);
      input = sealTop(this.codec, input, clear);
      state = sealMap(this.codec, state, clear);
    }
    const r = await this.api.POST("/v1/api/runs", {
      body: {
        workflow,
        input,
        version: opts.version,
        correlation: opts.correlation,
        idempotency_key: opts.idempotencyKey,
        deadline,
        state,
        priority: opts.priority,
        budget: opts.budget,
        attributes: opts.attributes as Record<string, unknown> | undefined,
      },
    });
    const res = unwrap(r);
    await resolveRun(this.api, res.run);
    this.openRun(res.run);
    return res;
  }

  /** The keys workflow@version leaves in the clear (read from its definition once per version). */
  private async clearKeys(workflow: string, version?: string): Promise<Set<string>> {
    const cached = version ? this.clearCache.get(`${workflow}@${version}`) : undefined;
    if (cached) return cached;
    let v = version;
    if (!v) {
      const l = await this.api.GET("/v1/api/workflows", {});
      v = unwrap(l).workflows.find((w) => w.name === workflow)?.latest;
      if (!v) return new Set();
    }
    const d = await this.api.GET("/v1/api/workflows/{name}/versions/{version}", { params: { path: { name: workflow, version: v } } });
    if (d.response.status === 404) return new Set();
    const clear = new Set(unwrap(d).clear ?? []);
    this.clearCache.set(`${workflow}@${v}`, clear);
    return clear;
  }

  /** Decodes the encrypted values of a run in place. */
  private openRun(r: Run): Run {
    const k = this.codec;
    if (!k) return r;
    r.input = open(k, r.input);
    r.output = open(k, r.output);
    if (r.state) for (const key of Object.keys(r.state)) r.state[key] = open(k, r.state[key]);
    for (const s of r.steps ?? []) {
      s.output = open(k, s.output);
      for (const op of s.operations ?? []) op.result = open(k, op.result);
    }
    return r;
  }

  /** Starts a batch: cancel, rerun, pause or resume every run matching the filter (at least one field). The server does the first page; poll getBatch until state is "done". */
  async startBatch(req: Schemas["BatchRequest"]): Promise<Schemas["Batch"]> {
    return unwrap(await this.api.POST("/v1/api/batches", { body: req }));
  }

  /** A namespace of the long-term store (store.ts). */
  store(namespace: string): Store {
    return new Store(this, namespace);
  }

  async getBatch(batch: string): Promise<Schemas["Batch"]> {
    return unwrap(await this.api.GET("/v1/api/batches/{batch}", { params: { path: { batch } } }));
  }

  async get(run: string): Promise<Run> {
    return this.openRun(await resolveRun(this.api, unwrap(await this.api.GET("/v1/api/runs/{run}", { params: { path: { run } } }))));
  }

  /**
   * Follows a run as it goes: its status at each change, each new journal
   * entry and its steps' progress values, until it ends (the last event
   * is `end`) or signal aborts (stream.ts).
   */
  stream(run: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent> {
    return streamRun(this.transport, run, opts.signal);
  }

  /** The run's progress; with after (a rev), held up to waitMs until the run changes. */
  async progress(run: string, after?: number, waitMs?: number, signal?: AbortSignal): Promise<RunProgress> {
    return unwrap(
      await this.api.GET("/v1/api/runs/{run}/status", {
        params: { path: { run }, query: after === undefined ? {} : { after, wait_ms: waitMs } },
        signal,
      }),
    );
  }

  /**
   * Follows a run until it ends: long-polls its progress (calling
   * onProgress on each change), then reads the whole run once and returns
   * it. A run that failed is returned, not thrown: look at its status. A
   * function's run that continued as new is followed to the last run of
   * the chain (its continued_from names the one before; get reads one run
   * as it is).
   */
  async wait(run: string, opts: WaitOptions = {}): Promise<Run> {
    for (;;) {
      const r = await this.waitOne(run, opts);
      if (!r.continued_as) return r;
      run = r.continued_as;
    }
  }

  private async waitOne(run: string, opts: WaitOptions): Promise<Run> {
    let after = -1;
    let backoff = 100;
    for (;;) {
      opts.signal?.throwIfAborted();
      try {
        const p = await this.progress(run, after >= 0 ? after : undefined, 20_000, opts.signal);
        backoff = 100;
        if (p.status !== "running" && p.status !== "paused") return await this.get(run);
        if (p.rev !== after) {
          after = p.rev;
          opts.onProgress?.(p);
        }
        continue;
      } catch (err) {
        if (!temporary(err) || opts.signal?.aborted) throw err;
      }
      await sleep(backoff, opts.signal);
      backoff = Math.min(backoff * 2, 2000);
    }
  }

  /** Waits for the run and returns its output; throws RunFailedError when it did not complete. */
  async result<T = unknown>(run: string, opts: WaitOptions = {}): Promise<T> {
    const r = await this.wait(run, opts);
    if (r.status !== "completed") throw new RunFailedError(r);
    return r.output as T;
  }

  async list(opts: ListOptions = {}): Promise<RunPage> {
    return unwrap(await this.api.GET("/v1/api/runs", { params: { query: { ...opts } } }));
  }

  async *runs(opts: ListOptions = {}): AsyncGenerator<RunSummary> {
    let cursor = opts.cursor;
    for (;;) {
      const page = await this.list({ ...opts, cursor });
      yield* page.runs;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  async journal(run: string): Promise<JournalEntry[]> {
    const entries = unwrap(await this.api.GET("/v1/api/runs/{run}/journal", { params: { path: { run } } })).entries;
    for (const e of entries) e.data = open(this.codec, e.data);
    return entries;
  }

  /** Sends an event to a run: it completes the wait step waiting for name. An id makes sending again a no-op. */
  async sendEvent(run: string, event: { name: string; payload?: unknown; id?: string }): Promise<EventResult> {
    const body = this.codec && event.payload !== undefined ? { ...event, payload: this.codec.encrypt(event.payload) } : event;
    return unwrap(await this.api.POST("/v1/api/runs/{run}/events", { params: { path: { run } }, body }));
  }

  /**
   * Sends update name with input to run and holds up to opts.wait for its
   * answer: the first wait for the name (or a function's waitForUpdate)
   * takes it, and the answer is the output of the step the wait names as
   * its answer (or the function's reply). Not answered by then, it is
   * returned with status accepted: poll it with getUpdate. With opts.id,
   * sending again is safe: the same update is answered, delivered once.
   * What cannot be delivered throws an APIError: no wait of the run left
   * for the name (422), an ended run or the id sent with another input (409).
   */
  async sendUpdate(run: string, name: string, input?: unknown, opts: { id?: string; wait?: Duration } = {}): Promise<Update> {
    const body = { name, id: opts.id, input: this.codec && input !== undefined ? this.codec.encrypt(input) : input, wait_ms: opts.wait === undefined ? undefined : durationMs(opts.wait) };
    return this.openUpdate(unwrap(await this.api.POST("/v1/api/runs/{run}/updates", { params: { path: { run } }, body })));
  }

  /** Update id of run, held up to opts.wait for its answer (at once by default). */
  async getUpdate(run: string, id: string, opts: { wait?: Duration } = {}): Promise<Update> {
    const query = opts.wait === undefined ? {} : { wait_ms: durationMs(opts.wait) };
    return this.openUpdate(unwrap(await this.api.GET("/v1/api/runs/{run}/updates/{id}", { params: { path: { run, id }, query } })));
  }

  /** An update's answer read when stored by reference, and decoded. */
  private async openUpdate(u: Update): Promise<Update> {
    u.answer = await resolveRunValue(this.api, u.run, u.answer);
    if (this.codec) u.answer = open(this.codec, u.answer);
    return u;
  }

  /**
   * Publishes event name: every workflow whose newest version has a
   * trigger of that name (WorkflowDef.on) it matches gets a run with
   * payload as input, once per opts.id (default: a new id, answered). The
   * payload is sent as it is (triggers' conditions read it), not
   * encrypted by a codec.
   */
  async publish(name: string, payload?: unknown, opts: { id?: string } = {}): Promise<PublishResult> {
    return unwrap(await this.api.POST("/v1/api/events", { body: { name, payload, id: opts.id } }));
  }

  /**
   * Moves the clock of a test server (`cairn dev --test-clock`, or
   * startTestServer from "@cairn-dev/cairn/testing") ms forward: the
   * sleeps, wait timeouts, retry backoffs, deadlines and schedule ticks due
   * by the new time have fired when it resolves. A server without a test
   * clock answers 404.
   */
  async advanceClock(ms: number): Promise<TestClock> {
    return unwrap(await this.api.POST("/v1/api/dev/clock", { body: { advance_ms: ms } }));
  }

  /** Reads a test server's clock (404 without one). */
  async clock(): Promise<TestClock> {
    return unwrap(await this.api.GET("/v1/api/dev/clock"));
  }

  async cancel(run: string, reason?: string): Promise<Run> {
    return this.openRun(await resolveRun(this.api, unwrap(await this.api.POST("/v1/api/runs/{run}/cancel", { params: { path: { run } }, body: { reason } }))));
  }

  /**
   * Pauses a running run: none of its steps is offered to a worker, and its
   * sleeps, backoffs, wait timeouts and deadline act only at its resume;
   * attempts held go on and are recorded. Pausing a paused run changes
   * nothing; an ended run is a 409.
   */
  async pause(run: string): Promise<Run> {
    return this.openRun(await resolveRun(this.api, unwrap(await this.api.POST("/v1/api/runs/{run}/pause", { params: { path: { run } } }))));
  }

  /**
   * Answers an interrupted step with value: its next attempt runs at once
   * with `ctx.resumed` true and `ctx.resume` the value. Resuming again with
   * the same value changes nothing; a step that is not interrupted is a 409.
   */
  async resumeStep(run: string, step: string, value?: unknown): Promise<Run> {
    return this.openRun(await resolveRun(this.api, unwrap(await this.api.POST("/v1/api/runs/{run}/steps/{step}/resume", { params: { path: { run, step } }, body: { value: value ?? null } }))));
  }

  /** Resumes a paused run (a running one is left as it is; an ended one is a 409). */
  async resume(run: string): Promise<Run> {
    return this.openRun(await resolveRun(this.api, unwrap(await this.api.POST("/v1/api/runs/{run}/resume", { params: { path: { run } } }))));
  }

  /**
   * Creates a schedule that starts a run of workflow at each tick of cron
   * (five fields, or @daily, @every 1h, …). With a codec, its input is
   * encrypted as a start's is (each top-level value, but the workflow's
   * clear keys): every run it starts gets the ciphertext. The schedule
   * views hold the input as stored (encrypted).
   */
  async createSchedule(workflow: string, cron: string, opts: ScheduleOptions = {}): Promise<Schedule> {
    let input = opts.input;
    if (this.codec && input !== undefined) input = sealTop(this.codec, input, await this.clearKeys(workflow, opts.version));
    return unwrap(
      await this.api.POST("/v1/api/schedules", {
        body: {
          workflow,
          cron,
          id: opts.id,
          version: opts.version,
          time_zone: opts.timeZone,
          input,
          overlap: opts.overlap,
          paused: opts.paused,
          description: opts.description,
        },
      }),
    );
  }

  async getSchedule(id: string): Promise<Schedule> {
    return unwrap(await this.api.GET("/v1/api/schedules/{schedule}", { params: { path: { schedule: id } } }));
  }

  /** A page of schedules by id (limit ≤ 100; cursor: the previous page's next_cursor). */
  async listSchedules(opts: { limit?: number; cursor?: string } = {}): Promise<SchedulePage> {
    return unwrap(await this.api.GET("/v1/api/schedules", { params: { query: { ...opts } } }));
  }

  /** Stops a schedule's ticks until resumeSchedule. */
  async pauseSchedule(id: string): Promise<Schedule> {
    return unwrap(await this.api.POST("/v1/api/schedules/{schedule}/pause", { params: { path: { schedule: id } } }));
  }

  /** Resumes a paused schedule from now on. */
  async resumeSchedule(id: string): Promise<Schedule> {
    return unwrap(await this.api.POST("/v1/api/schedules/{schedule}/resume", { params: { path: { schedule: id } } }));
  }

  /** Deletes a schedule; the runs it started stay. */
  async deleteSchedule(id: string): Promise<void> {
    unwrap(await this.api.DELETE("/v1/api/schedules/{schedule}", { params: { path: { schedule: id } } }));
  }

  /**
   * Deletes result cache entries of a workflow's step: with a key (the
   * value its cache key renders to), that key's only; without, every one.
   * Answers how many were deleted; their next attempts run on a worker.
   */
  async invalidateCache(workflow: string, step: string, ...key: [] | [unknown]): Promise<number> {
    const query = key.length ? { key: JSON.stringify(key[0]) } : {};
    return unwrap(await this.api.DELETE("/v1/api/cache/{workflow}/{step}", { params: { path: { workflow, step }, query } })).deleted;
  }

  /** Starts the runs of the ticks in (from, to], at most max (≤ 100); ticks that have a run are reported existed, not started again. */
  async backfillSchedule(id: string, from: Date, to: Date, max?: number): Promise<BackfillResult> {
    return unwrap(
      await this.api.POST("/v1/api/schedules/{schedule}/backfill", {
        params: { path: { schedule: id } },
        body: { from: from.toISOString(), to: to.toISOString(), max },
      }),
    );
  }

  async workers(): Promise<WorkerInfo[]> {
    return unwrap(await this.api.GET("/v1/api/workers", {})).workers;
  }

  /** Says worker id stopped (its drain ended): the server lists it as gone at once. Worker.serve sends it when it returns. */
  async stopWorker(id: string): Promise<void> {
    unwrap(await this.api.POST("/v1/api/workers/{worker}/stop", { params: { path: { worker: id } } }));
  }
}

/** A run that did not complete, from Client.result. */
export class RunFailedError extends Error {
  override readonly name = "RunFailedError";
  constructor(readonly run: Run) {
    const e = run.error;
    super(`cairn: run ${run.id} ${run.status}${e ? `: step ${e.step ?? "?"}: ${e.class}: ${e.message}` : ""}`);
  }
}

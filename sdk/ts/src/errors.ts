// Errors a step body throws to tell the engine how to treat the failure,
// the reasons a body's AbortSignal is aborted with, and the API's refusals.

import { classedError, fixedError } from "./errorclass.js";

/** The engine retries the step with backoff, within its retry budget. Class `retryable`. */
export class RetryableError extends classedError("RetryableError", "retryable") {}

/**
 * A typed failure: retried like a retryable one unless the step's retry
 * policy lists its class in `nonRetryable`.
 */
export class StepFailure extends Error {
  override readonly name = "StepFailure";
  constructor(readonly class_: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    if (!/^[a-z][a-z0-9_]*$/.test(class_)) throw new TypeError(`cairn: failure class ${JSON.stringify(class_)} is not a lower_snake_case word`);
  }
  get class(): string {
    return this.class_;
  }
}

/** Fails the step, and so the run: retrying cannot help. Class `fatal` (also what any other thrown value is). */
export class FatalError extends classedError("FatalError", "fatal") {}

/**
 * Thrown by a body to interrupt its step: the engine records the step as
 * `interrupted` with the payload (shown by the CLI and the dashboard) and
 * offers no attempt until `client.resumeStep` answers it; the step then
 * runs again with `ctx.resumed` true and the answer in `ctx.resume`. No
 * retry budget is spent.
 */
export class InterruptError extends Error {
  override readonly name = "InterruptError";
  constructor(readonly payload: unknown) {
    super("cairn: step interrupted");
  }
}

/** `throw interrupt(payload)`: the Go SDK's sdk.Interrupt. */
export const interrupt = (payload?: unknown) => new InterruptError(payload ?? null);

/** Convenience constructors, mirroring the Go SDK's sdk.Retryable / sdk.Failure / sdk.Fatal. */
export const retryable = (message: string, cause?: unknown) => new RetryableError(message, { cause });
export const failure = (cls: string, message: string, cause?: unknown) => new StepFailure(cls, message, { cause });
export const fatal = (message: string, cause?: unknown) => new FatalError(message, { cause });

/** The body's signal reason when a heartbeat or call was refused `fenced`: another attempt owns the step now. Nothing is reported. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(readonly lease: string) {
    super("cairn: the lease was lost (fenced): another attempt owns the step");
  }
}

/** The body's signal reason when the run ended (refused `run_terminal`). Nothing is reported. */
export class RunEndedError extends Error {
  override readonly name = "RunEndedError";
  constructor(readonly run: string) {
    super(`cairn: run ${run} ended`);
  }
}

/** The body's signal reason when the step's timeout passed; the attempt is reported as class `timeout`. */
export class AttemptTimeoutError extends fixedError("AttemptTimeoutError", "cairn: the attempt's timeout passed") {}

/** The body's signal reason when the worker stops and the drain timeout passed; reported as class `interrupted`. */
export class ShutdownError extends fixedError("ShutdownError", "cairn: the worker shut down before the body ended") {}

/** One field problem of a 422. */
export interface FieldProblem {
  location?: string;
  message?: string;
  value?: unknown;
}

/** A refusal by the API: an RFC 9457 problem. */
export class APIError extends Error {
  override readonly name = "APIError";
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** The 409's reason: already_applied, fenced, run_terminal, not_started, too_large. */
  readonly reason: string | undefined;
  readonly errors: FieldProblem[];
  constructor(status: number, problem: { title?: string; detail?: string; reason?: string; errors?: FieldProblem[] } | undefined) {
    const title = problem?.title ?? `HTTP ${status}`;
    const detail = problem?.detail ?? "";
    const fields = (problem?.errors ?? []).map((e) => `${e.location ?? "?"}: ${e.message ?? ""}`).join("; ");
    super(`cairn: ${status} ${title}${detail ? ": " + detail : ""}${fields ? " (" + fields + ")" : ""}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.reason = problem?.reason;
    this.errors = problem?.errors ?? [];
  }
  /** Nothing was applied and sending again may succeed (503, 429). */
  get temporary(): boolean {
    return this.status === 503 || this.status === 429;
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof APIError && e.status === 404;
export const isConflict = (e: unknown): boolean => e instanceof APIError && e.status === 409;
export const reasonOf = (e: unknown): string | undefined => (e instanceof APIError ? e.reason : undefined);

/** The class an error thrown by a body is reported with. */
export function classOf(err: unknown): string {
  if (err instanceof RetryableError) return "retryable";
  if (err instanceof StepFailure) return err.class;
  if (err instanceof AttemptTimeoutError) return "timeout";
  if (err instanceof ShutdownError) return "interrupted";
  return "fatal";
}

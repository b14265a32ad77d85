"""Errors a step body raises to tell the engine how to treat its failure,
the causes a body is cancelled with, and the API's refusals.

A body that raises :class:`RetryableError` is retried within its step's
budget; :class:`StepFailure` names any other class (retried unless the step's
retry policy lists it as non-retryable); anything else is fatal. The message
reaches the engine and the journal; the traceback goes to the worker's log
only.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Error classes with a meaning to the engine. Any other class is a typed
# failure (StepFailure).
CLASS_RETRYABLE = "retryable"
CLASS_FATAL = "fatal"
CLASS_UNSERVABLE = "unservable"
CLASS_TIMEOUT = "timeout"
CLASS_PANIC = "panic"
CLASS_OUTPUT_TOO_LARGE = "output_too_large"
CLASS_INTERRUPTED = "interrupted"

# Rejection reasons of the worker protocol (HTTP 409).
REASON_ALREADY_APPLIED = "already_applied"
REASON_FENCED = "fenced"
REASON_RUN_TERMINAL = "run_terminal"
REASON_NOT_STARTED = "not_started"
REASON_TOO_LARGE = "too_large"

_CLASS_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class CairnError(Exception):
    """Base of the SDK's errors."""


class StepError(CairnError):
    """An error with the class the engine files it under."""

    def __init__(self, cls: str, message: str) -> None:
        if not _CLASS_RE.match(cls):
            raise ValueError(f"cairn: failure class {cls!r} is not a lower_snake_case word")
        super().__init__(message)
        self.cls = cls
        self.message = message


class Interrupt(CairnError):
    """Raised by a body to interrupt its step: the engine records the step as
    ``interrupted`` with the payload (shown by the CLI and the dashboard) and
    offers no attempt until :meth:`cairn.Client.resume_step` answers it; the
    step then runs again with ``ctx.resumed`` true and the answer in
    ``ctx.resume``. No retry budget is spent."""

    def __init__(self, payload: Any = None) -> None:
        super().__init__("cairn: step interrupted")
        self.payload = payload


class RetryableError(StepError):
    """The engine retries the step with backoff, within its retry budget. Class ``retryable``."""

    def __init__(self, message: str) -> None:
        super().__init__(CLASS_RETRYABLE, message)


class StepFailure(StepError):
    """A typed failure: retried like a retryable one unless the step's retry
    policy lists its class in ``non_retryable``."""


class FatalError(StepError):
    """Fails the step, and so the run: retrying cannot help. Class ``fatal``
    (also what any other exception is)."""

    def __init__(self, message: str) -> None:
        super().__init__(CLASS_FATAL, message)


def retryable(message: str) -> RetryableError:
    """A retryable error (the Go SDK's sdk.Retryable)."""
    return RetryableError(message)


def failure(cls: str, message: str) -> StepFailure:
    """A typed failure of class cls (the Go SDK's sdk.Failure)."""
    return StepFailure(cls, message)


def fatal(message: str) -> FatalError:
    """A fatal error (the Go SDK's sdk.Fatal)."""
    return FatalError(message)


def class_of(err: BaseException) -> str:
    """The class an exception raised by a body is reported with."""
    if isinstance(err, StepError):
        return err.cls
    if isinstance(err, AttemptTimeout):
        return CLASS_TIMEOUT
    if isinstance(err, Shutdown):
        return CLASS_INTERRUPTED
    return CLASS_FATAL


def message_of(err: BaseException) -> str:
    msg = str(err)
    return msg if msg else f"{type(err).__name__} ({class_of(err)})"


# ---- causes of a cancelled body ----


class Cancelled(CairnError):
    """Why a body was cancelled: raised by StepContext.raise_if_cancelled, and
    the cause of an async body's cancellation."""


class LeaseLost(Cancelled):
    """The engine fenced the lease (it expired and was reclaimed, or another
    attempt finished the step). Nothing the body returns is published."""

    def __init__(self) -> None:
        super().__init__("cairn: lease lost (fenced)")


class RunEnded(Cancelled):
    """The run ended while the body ran. Nothing the body returns is published."""

    def __init__(self, run: str = "") -> None:
        super().__init__(f"cairn: run {run} ended" if run else "cairn: run ended")


class AttemptTimeout(Cancelled):
    """The attempt outlived the step's timeout; it is reported with class timeout."""

    def __init__(self) -> None:
        super().__init__("cairn: attempt timed out")


class Shutdown(Cancelled):
    """The worker is shutting down and the drain timeout passed; unless the
    body then returns its output at once, the attempt is reported as
    interrupted."""

    def __init__(self) -> None:
        super().__init__("cairn: worker shutting down")


# ---- API refusals ----


class APIError(CairnError):
    """A request the API refused: an RFC 9457 problem, with the worker
    protocol's reason on a 409."""

    def __init__(
        self,
        status: int,
        title: str = "",
        detail: str = "",
        reason: str = "",
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.reason = reason
        self.errors = errors or []
        parts = [str(status)]
        if reason:
            parts.append(f" {reason}")
        elif title:
            parts.append(f" {title}")
        if detail:
            parts.append(f": {detail}")
        for e in self.errors[:3]:
            m = str(e.get("message") or "")
            if m and m not in detail:
                loc = e.get("location")
                parts.append(f"; {loc}: {m}" if loc else f"; {m}")
        super().__init__("".join(parts))

    @property
    def temporary(self) -> bool:
        """Retrying the same request may succeed: the store was busy, the server failed."""
        return self.status == 429 or self.status >= 500

    @classmethod
    def from_body(cls, status: int, body: bytes) -> APIError:
        """Decodes an RFC 9457 problem; a body that is not one still gives a usable error."""
        try:
            p = json.loads(body) if body else None
        except ValueError:
            p = None
        if isinstance(p, dict):
            errs = p.get("errors")
            return cls(
                status,
                title=str(p.get("title") or ""),
                detail=str(p.get("detail") or ""),
                reason=str(p.get("reason") or "") if status == 409 else "",
                errors=[e for e in errs if isinstance(e, dict)] if isinstance(errs, list) else None,
            )
        text = body.decode("utf-8", "replace").strip()
        return cls(status, title=f"HTTP {status}", detail=text[:200])


class TransportError(CairnError):
    """A request that got no answer from the API."""

    def __init__(self, server: str, err: BaseException) -> None:
        msg = str(err) or type(err).__name__
        if "refused" in msg.lower() or "connect" in type(err).__name__.lower():
            text = f"cannot reach cairn at {server}: {msg} (is the server running? `make run` starts one)"
        else:
            text = f"cairn at {server}: {msg}"
        super().__init__(text)
        self.server = server
        self.__cause__ = err


def reason_of(err: BaseException) -> str:
    """The worker-protocol reason of a refused call, or ""."""
    return err.reason if isinstance(err, APIError) and err.status == 409 else ""


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, APIError) and err.status == 404


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, APIError) and err.status == 409


def temporary(err: BaseException) -> bool:
    """Whether an API call's error may go away on retry."""
    if isinstance(err, TransportError):
        return True
    return isinstance(err, APIError) and err.temporary


class RunFailedError(CairnError):
    """A run that did not complete, from Client.result."""

    def __init__(self, run: Any) -> None:
        self.run = run
        text = f"cairn: run {run.id} {run.status}"
        e = run.error
        if hasattr(e, "class_"):
            text += f": step {e.step or '?'}: {e.class_}: {e.message}"
        super().__init__(text)

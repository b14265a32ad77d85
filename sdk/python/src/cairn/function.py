"""Durable functions: a workflow written as ordinary code whose operations
are checkpointed in the bucket (docs/FUNCTIONS.md; docs/SDK-PY.md).

The body is an ``async def body(fc, input)`` (or a plain ``def``, below);
each operation on ``fc`` — :meth:`Durable.step`, :meth:`Durable.sleep`, :meth:`Durable.wait_for_event`,
:meth:`Durable.invoke`, :meth:`Durable.now`, :meth:`Durable.random`,
:meth:`Durable.uuid`, :meth:`Durable.patched`, :meth:`Durable.map`,
:meth:`Durable.parallel` — is named by the caller, and its outcome is
recorded under the driver's lease. A suspension (a long sleep, a wait, an
invoke) ends the attempt; the next attempt runs the body again and every
operation already recorded returns its recorded outcome at once. The body
must therefore reach the same operations on every replay.

The ids, records and checkpoints are the Go SDK's (sdk/function.go), so a
history recorded by a Go or TypeScript worker replays here and the other
way round::

    async def checkout(fc: cairn.Durable, order: dict) -> dict:
        charge = await fc.step("charge", lambda: payments.charge(order), at_most_once=True)
        await fc.sleep("cool-off", 24 * 3600)
        ok = await fc.wait_for_event("approval", "approve", timeout=72 * 3600)
        inv = await fc.invoke("bill", "billing", order)
        return {"charge": charge, "approved": ok, "invoice": inv}

    wf = cairn.function("checkout", "1", checkout)

A plain ``def body(fc, input)`` works too: it runs on a thread of its own
with a :class:`SyncDurable`, whose operations block (``fc.step(...)``, no
await) and run on the worker's event loop as the async form's do — the
same ids and records, so either form replays the other's history.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import datetime as _dt
import inspect
import json
import logging
import random as _random
import re
import threading
import uuid as _uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack, cast

from . import errors as E
from .codec import CLASS_CODEC, CodecError, open_value
from .payloads import as_payload_ref
from .workflow import Duration, RetryPolicy, Workflow

if TYPE_CHECKING:
    from .worker import StepContext, StepInfo

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741

#: A durable function's body: the context and the run's input in, the output out.
FunctionBody = Callable[["Durable", Any], Awaitable[Any]]
#: A plain ``def`` body: its operations block (docs/SDK-PY.md).
SyncFunctionBody = Callable[["SyncDurable", Any], Any]

CLASS_NONDETERMINISM = "nondeterminism"
CLASS_LOST = "lost"

#: The longest sleep a driver waits out holding its lease; a longer one
#: suspends the function (its worker slot is freed).
INLINE_SLEEP = 2.0
#: What the function recorded is sent before each step's body, before a
#: suspension and when the body returns; records made between go once the
#: oldest has waited FLUSH_DELAY, or at once when FLUSH_OPS wait.
FLUSH_OPS = 32
FLUSH_DELAY = 0.25
#: The most operations one checkpoint carries (the engine's bound is 1,000).
MAX_CHECKPOINT_OPS = 500

_NOT_RETRIED = frozenset({"fatal", "render_error", "lost", "dead_lettered", "output_too_large", CLASS_NONDETERMINISM})


class Suspended(BaseException):
    """The function suspended: the engine ended the attempt, and a later one
    goes on. An operation raises it; the body must let it through (it is a
    BaseException so that ``except Exception`` does not catch it)."""

    def __init__(self) -> None:
        super().__init__("cairn: the function suspended; a later attempt goes on")


@dataclasses.dataclass(frozen=True)
class Received:
    """An update a durable function's wait took: its id ("" for an event,
    which has no sender to answer) and its input."""

    id: str
    input: Any


class ContinueAsNew(BaseException):
    """Raised by a function's body to end its run by starting a new run of the
    same workflow and version with input and an empty history, for a loop
    that would outgrow its history::

        raise cairn.ContinueAsNew({"page": next_page})

    The run completes with output ``{"continued_as": <the new run's id>}``;
    the client's wait and result follow the chain to its last run. A run a
    parent started (a child step, an invoke) cannot continue as new. It is a
    BaseException, as Suspended is: ``except Exception`` lets it through."""

    def __init__(self, input: Any = None) -> None:
        super().__init__("cairn: the function continues as a new run")
        self.input = _json_copy(input, "the input of the run to continue as")


_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(d: Duration) -> float:
    """A duration in seconds: a number, or a Go duration string ("1m30s")."""
    if not isinstance(d, str):
        return float(d)
    s = d.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    total, pos = 0.0, 0
    for m in _GO_DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"cairn: invalid duration {d!r}")
    return sign * total


def _rfc3339(t: _dt.datetime) -> str:
    """A time as the wire carries it: UTC, with Z."""
    return t.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(v: Any) -> _dt.datetime:
    if isinstance(v, _dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=_dt.UTC)
    if not isinstance(v, str):
        raise ValueError(f"not a time: {v!r}")
    t = _dt.datetime.fromisoformat(v)
    return t if t.tzinfo is not None else t.replace(tzinfo=_dt.UTC)


def _q(s: str) -> str:
    """A quoted string, as Go's %q prints it (for plain text)."""
    return json.dumps(s, ensure_ascii=False)


def _op_error(e: Any) -> E.StepError:
    if not isinstance(e, dict):
        return E.fatal("a failed operation without its error")
    return E.failure(str(e.get("class") or "fatal"), str(e.get("message") or ""))


def _last_outcome(recs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if recs and recs[-1].get("status") != "started":
        return recs[-1]
    return None


def _race_lost() -> asyncio.CancelledError:
    """What ends the branches of a race once another ended first."""
    return asyncio.CancelledError("cairn: another branch of the race ended first")


def _keeps_results(cause: BaseException) -> bool:
    """Whether a function whose attempt was cancelled for cause still records
    what its steps returned: a draining worker and an attempt's timeout end
    the attempt after one more checkpoint (_drive), the other causes end it
    without one."""
    return isinstance(cause, E.Shutdown | E.AttemptTimeout)


def _json_copy(v: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(v))
    except (TypeError, ValueError) as e:
        raise E.fatal(f"encoding {what}: {e}") from None


class _Journal:
    """An attempt's history, shared by the body and its branches."""

    def __init__(self, sc: StepContext) -> None:
        self.sc = sc
        assert sc._lease is not None and sc._checkpoint is not None, "a function step run without its driver hooks"
        self.lease = sc._lease
        self.send = sc._checkpoint
        raw = [] if sc._lease.history is None or not isinstance(sc._lease.history, list) else sc._lease.history
        self.hist: list[dict[str, Any]] = [op.to_dict() for op in raw]
        if sc._codec is not None:
            # The recorded results, decoded (those stored by reference once read: Durable._resolve).
            for op in self.hist:
                if "result" in op and as_payload_ref(op["result"]) is None:
                    try:
                        op["result"] = open_value(sc._codec, op["result"])
                    except CodecError as err:
                        raise E.failure(
                            CLASS_CODEC, f"cairn: decrypting the recorded result of {op['id']}: {err}"
                        ) from err
        # The server's clock less this process's, as the lease tells it (it
        # was made at its expiry less its TTL): a function's times (sleeps,
        # timeouts, now) are the server's, which decides when they come due
        # (a test server's clock is moved).
        self.skew = _dt.timedelta(0)
        if sc._lease.lease_ttl_ms > 0 and sc._lease.expires_at:
            made = _parse_time(sc._lease.expires_at) - _dt.timedelta(milliseconds=sc._lease.lease_ttl_ms)
            self.skew = made - _dt.datetime.now(_dt.UTC)
        self.by_id: dict[str, list[int]] = {}
        for i, op in enumerate(self.hist):
            self.by_id.setdefault(op["id"], []).append(i)
        self.visited: set[str] = set()
        self.pending: list[dict[str, Any]] = []
        self.stop: BaseException | None = None
        self.halted = asyncio.Event()  # set with stop
        self.flush_lock = asyncio.Lock()
        self.timer: asyncio.TimerHandle | None = None
        self.bg: set[asyncio.Task[None]] = set()
        # The barrier of branches (map, parallel): running counts the scopes
        # that may still record operations; a suspension waits (parked) until
        # none runs, and the attempt then suspends once, for all of them.
        self.running = 1
        self.parked: list[tuple[str, dict[str, Any]]] = []  # a parked scope's suspension

    def now(self) -> _dt.datetime:
        """The server's time."""
        return _dt.datetime.now(_dt.UTC) + self.skew

    def halt(self, why: BaseException) -> BaseException:
        if self.stop is None:
            self.stop = why
            self.halted.set()
        return self.stop

    def broken(self, what: str) -> BaseException:
        """Stops the body for nondeterminism."""
        return self.halt(
            E.failure(
                CLASS_NONDETERMINISM,
                f"nondeterminism in run {self.sc.info.run}: {what}; the code changed under a run in flight: "
                "gate changes with Patched (docs/FUNCTIONS.md)",
            )
        )

    def unreached(self) -> BaseException | None:
        for op in self.hist:
            if op["id"] not in self.visited:
                return self.broken(
                    f"the body returned without reaching {op['kind']} {_q(op['id'])} (seq {op['seq']}), "
                    "which the history records"
                )
        return None

    def check(self) -> None:
        if self.stop is not None:
            raise self.stop
        if self.sc._cause is not None:
            raise self.sc._cause

    def record(self, op: dict[str, Any]) -> None:
        op["seq"] = len(self.hist) + len(self.pending)
        if not self.pending:
            self.arm()
        self.pending.append(op)

    def arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self._background)

    def _background(self) -> None:
        self.timer = None

        async def go() -> None:
            try:
                await self.flush(None)
            except BaseException as e:  # a failure cancels the body, or the next flush retries
                self.sc.log.debug("a background checkpoint failed: %s", e)

        t = asyncio.get_running_loop().create_task(go())
        self.bg.add(t)
        t.add_done_callback(self.bg.discard)

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    async def flush(self, sp: dict[str, Any] | None) -> None:
        """Sends the pending operations (500 a call), with the suspension sp on the last call."""
        async with self.flush_lock:
            while True:
                n = len(self.pending)
                ops = list(self.pending[:MAX_CHECKPOINT_OPS])
                last = n <= MAX_CHECKPOINT_OPS
                if last and n == 0 and sp is None:
                    return
                req: dict[str, Any] = {"operations": ops}
                if last and sp is not None:
                    req["suspend"] = sp
                await self.send(req)
                for op in ops:
                    self.by_id.setdefault(op["id"], []).append(len(self.hist))
                    self.hist.append(op)
                del self.pending[: len(ops)]
                if self.pending:
                    self.arm()
                elif self.timer is not None:
                    self.stop_timer()
                if last:
                    return

    async def suspend(self, scope: str, sp: dict[str, Any], on_park: Callable[[], None] | None) -> BaseException:
        """Ends the attempt as sp says, sending what is pending; in a branch,
        once no other branch runs. Returns what the caller raises."""
        self.parked.append((scope, sp))
        self.running -= 1
        if on_park is not None:
            on_park()
        if self.running == 0:
            return await self.suspend_now()
        await self.halted.wait()
        assert self.stop is not None
        return self.stop

    def unpark(self, scope: str) -> None:
        """Takes the parked suspensions of scope and the scopes under it back:
        they run again (to their end)."""
        kept = []
        for p in self.parked:
            if p[0] == scope or p[0].startswith(scope + "/"):
                self.running += 1
            else:
                kept.append(p)
        self.parked = kept

    def lost(self, id: str, winner: str) -> None:
        """Marks what the losing branches of race id recorded as reached: they
        are not run again, and what they did stays unread."""
        for op in self.hist:
            if op["id"].startswith(id + "/") and not op["id"].startswith(winner + "/"):
                self.visited.add(op["id"])

    async def leave(self) -> None:
        """A branch's end: the last scope running suspends the attempt for the parked ones."""
        self.running -= 1
        if self.running == 0 and self.parked and self.stop is None:
            try:
                await self.suspend_now()
            except BaseException as e:  # the parked branches get the outcome from stop
                self.halt(e)

    async def suspend_now(self) -> BaseException:
        """Suspends the attempt for every parked suspension at once: until the
        earliest time, and for one operation's event or run (the others
        suspend again when the next attempt replays to them)."""
        sp: dict[str, Any] = {}
        until: _dt.datetime | None = None
        for _, p in self.parked:
            if "op" in p and "op" not in sp:
                sp.update({k: v for k, v in p.items() if k != "until"})
            if "until" in p:
                t = _parse_time(p["until"])
                if until is None or t < until:
                    until = t
        if until is not None:
            sp["until"] = _rfc3339(until)
        try:
            await self.flush(sp)
        except BaseException as e:
            self.halt(e)
            raise
        return self.halt(Suspended())


class Durable:
    """A durable function's context: its operations, and the driver's attempt.
    Operations named the same are told apart by their order: the k-th use of
    a name in a scope is operation ``<scope>/name#k``. :meth:`map` and
    :meth:`parallel` give each branch a Durable of its own scope."""

    def __init__(
        self,
        j: _Journal,
        scope: str = "",
        on_park: Callable[[], None] | None = None,
        lost: Callable[[], bool] | None = None,
    ) -> None:
        self._j = j
        self._scope = scope
        self._uses: dict[str, int] = {}
        self._on_park = on_park
        # Whether this scope (or one it is in) lost a race: it records nothing more.
        self._lost: Callable[[], bool] = lost or (lambda: False)

    @property
    def info(self) -> StepInfo:
        """The driver's attempt."""
        return self._j.sc.info

    @property
    def log(self) -> logging.LoggerAdapter[logging.Logger]:
        return self._j.sc.log

    @property
    def input(self) -> Any:
        return self._j.sc.input

    @property
    def step_context(self) -> StepContext:
        """The driver's step context (state patch, usage, spans)."""
        return self._j.sc

    def _begin(self, name: str, kind: str) -> tuple[str, list[dict[str, Any]]]:
        """Names the next use of name; its id and what the history holds for it."""
        j = self._j
        j.check()
        if self._lost():
            raise _race_lost()
        k = self._uses.get(name, 0)
        self._uses[name] = k + 1
        id = f"{self._scope}/{name}#{k}"
        j.visited.add(id)
        recs = [j.hist[i] for i in j.by_id.get(id, ())]
        recs += [op for op in j.pending if op["id"] == id]
        if recs and recs[0]["kind"] != kind:
            raise j.broken(
                f"replay reached {kind} {_q(id)} where the history records {recs[0]['kind']} {_q(id)} "
                f"(seq {recs[0]['seq']})"
            )
        return id, recs

    async def _suspend(self, sp: dict[str, Any]) -> BaseException:
        return await self._j.suspend(self._scope, sp, self._on_park)

    # ---- step ----

    async def step(
        self,
        name: str,
        fn: Callable[[], Awaitable[T]] | Callable[[], T],
        *,
        retry: RetryPolicy | None = None,
        timeout: Duration | None = None,
        at_most_once: bool = False,
    ) -> T:
        """Runs fn once for the function: its result (any JSON value) is
        checkpointed, and a replay returns it without running fn again. fn
        takes no arguments; an ``async def`` runs on the event loop, a plain
        function on a thread. retry: fn is retried in this attempt, backing
        off, by its error's class (a task's default: 3 tries from 1 s);
        timeout bounds each try (class timeout); at_most_once: fn never runs
        again once it started, even after a crash (a replay that finds it
        started without an outcome fails it with class lost). An error that
        ends the step is raised with its class, and raised again on replay."""
        j = self._j
        id, recs = self._begin(name, "step")
        retries = self._retries(id)  # backoffs an earlier attempt suspended for
        if recs:
            last = recs[-1]
            if last["status"] == "completed":
                v: T = await self._resolve(last.get("result"))  # a large result is stored by reference
                return v
            if last["status"] == "failed":
                raise _op_error(last.get("error"))
            # started, no outcome: an at_most_once step is not run again.
            why = {
                "class": CLASS_LOST,
                "message": f"at_most_once step {id} started in an earlier attempt without recording an outcome: "
                "it is not run again",
            }
            j.record({"id": id, "kind": "step", "status": "failed", "error": why})
            raise _op_error(why)
        if at_most_once:
            j.record({"id": id, "kind": "step", "status": "started"})
        # What the function recorded so far is durable before this step's
        # side effects begin: a step that completed never runs again, and an
        # at_most_once step's start is on record before its body.
        await j.flush(None)
        out, why2 = await self._run_step(id, fn, retry, timeout, at_most_once, retries)
        op: dict[str, Any] = {"id": id, "kind": "step", "status": "completed"}
        if why2 is None:
            try:
                op["result"] = json.loads(json.dumps(out))
            except (TypeError, ValueError) as e:
                why2 = {"class": E.CLASS_FATAL, "message": f"encoding the result of step {_q(id)}: {e}"}
        if self._lost():
            raise _race_lost()  # another branch of a race ended first: record nothing
        cause = j.sc._cause
        if cause is not None and (why2 is not None or not _keeps_results(cause)):
            # The lease is gone or the run ended — or the body was cut off:
            # record nothing (it runs again).
            raise cause
        if why2 is not None:
            op = {"id": id, "kind": "step", "status": "failed", "error": why2}
        j.record(op)
        # An at_most_once step's outcome is durable at once: a crash before
        # the next checkpoint would fail it as lost although it ran.
        if at_most_once or len(j.pending) >= FLUSH_OPS:
            await j.flush(None)
        if why2 is not None:
            raise _op_error(why2)
        result: T = op["result"]
        return result

    async def _run_step(
        self,
        id: str,
        fn: Callable[[], Any],
        retry: RetryPolicy | None,
        timeout: Duration | None,
        at_most_once: bool,
        retries: list[dict[str, Any]],
    ) -> tuple[Any, dict[str, Any] | None]:
        """Runs fn until it succeeds or its error ends the step. A backoff longer
        than INLINE_SLEEP is a recorded sleep, <id>.retry#<n>, whose result is
        the failures so far: the attempt suspends until it (raising what the
        body lets through), and the next one goes on from the try after it
        (retries: the records an earlier attempt made)."""
        j = self._j
        p = retry or RetryPolicy()
        attempts = p.max_attempts if p.max_attempts and p.max_attempts > 0 else 3
        initial = seconds(p.initial_backoff) if p.initial_backoff is not None else 1.0
        most = seconds(p.max_backoff) if p.max_backoff is not None else 300.0
        mult = p.multiplier if p.multiplier and p.multiplier > 0 else 2.0
        limit = seconds(timeout) if timeout is not None else 0.0
        failures = 0
        for r in retries:
            if r["kind"] != "sleep":
                raise j.broken(
                    f"replay reached the backoff {r['id']} of step {id} where the history records "
                    f"{r['kind']} {_q(r['id'])} (seq {r['seq']})"
                )
        if retries:
            last = retries[-1]
            n = last.get("result", {}).get("failures") if isinstance(last.get("result"), dict) else None
            if not isinstance(n, int) or isinstance(n, bool) or not last.get("wake_at"):
                raise j.broken(f"the retry recorded as {last['id']} is not a backoff this SDK records")
            failures = n
            await self._backoff_until(_parse_time(last["wake_at"]))
        failures += 1
        while True:
            try:
                return await self._try(id, fn, limit), None
            except asyncio.CancelledError:
                raise
            except Exception as err:
                cls, msg = E.class_of(err), E.message_of(err)
                if not isinstance(err, E.StepError):
                    self.log.info("step %s raised %s", id, type(err).__name__, exc_info=err)
            if (
                at_most_once
                or cls in _NOT_RETRIED
                or cls in p.non_retryable
                or failures >= attempts
                or self._j.sc._cause is not None
            ):
                return None, {"class": cls, "message": msg}
            d = min(initial * mult ** (failures - 1), most) * (0.8 + 0.4 * _random.random())
            wake = self._j.now() + _dt.timedelta(seconds=d)
            if d > INLINE_SLEEP:
                j.record(
                    {
                        "id": f"{id}.retry#{len(retries)}",
                        "kind": "sleep",
                        "status": "completed",
                        "wake_at": _rfc3339(wake),
                        "result": {"failures": failures},
                    }
                )
                raise await self._suspend({"until": _rfc3339(wake)})
            await self._backoff_until(wake)
            failures += 1

    def _retries(self, id: str) -> list[dict[str, Any]]:
        """The backoffs recorded for step id (<id>.retry#<n>, in order), marked reached."""
        j = self._j
        out: list[dict[str, Any]] = []
        n = 0
        while True:
            rid = f"{id}.retry#{n}"
            at = j.by_id.get(rid)
            if not at:
                return out
            j.visited.add(rid)
            out.append(j.hist[at[0]])
            n += 1

    async def _backoff_until(self, t: _dt.datetime) -> None:
        """Waits for t in the attempt when it is near, else suspends the
        function until then (recording nothing: the backoff is recorded)."""
        left = (t - self._j.now()).total_seconds()
        if left > INLINE_SLEEP:
            raise await self._suspend({"until": _rfc3339(t)})
        if left > 0:
            await asyncio.sleep(left)

    async def _try(self, id: str, fn: Callable[[], Any], limit: float) -> Any:
        async def once() -> Any:
            if inspect.iscoroutinefunction(fn):
                return await fn()
            th = asyncio.ensure_future(asyncio.to_thread(fn))
            try:
                v = await asyncio.shield(th)
            except asyncio.CancelledError:
                cause = self._j.sc._cause
                if cause is None or not _keeps_results(cause):
                    raise
                # Cut off by the drain or the attempt's timeout: a thread is
                # not stopped, and what it returns is recorded.
                v = await th
            if inspect.isawaitable(v):
                return await v
            return v

        if limit <= 0:
            return await once()
        try:
            return await asyncio.wait_for(once(), limit)
        except TimeoutError:
            raise E.failure(E.CLASS_TIMEOUT, f"step {id} exceeded its timeout of {limit}s") from None

    # ---- sleep ----

    async def sleep(self, name: str, seconds_: Duration) -> None:
        """Waits seconds (a number, or a Go duration string); see sleep_until."""
        d = seconds(seconds_)
        await self._sleep(name, lambda: self._j.now() + _dt.timedelta(seconds=d))

    async def sleep_until(self, name: str, t: _dt.datetime) -> None:
        """Waits until t. A wait longer than a couple of seconds suspends the
        function: the attempt ends (the call raises Suspended, which the body
        must let through), the worker's slot is freed, and the next attempt
        replays the body at t. The end is recorded, so a replay waits for the
        same time."""
        await self._sleep(name, lambda: _parse_time(t))

    async def _sleep(self, name: str, end: Callable[[], _dt.datetime]) -> None:
        j = self._j
        id, recs = self._begin(name, "sleep")
        if recs and recs[0].get("wake_at"):
            wake = _parse_time(recs[0]["wake_at"])
        else:
            wake = end()
            j.record({"id": id, "kind": "sleep", "status": "completed", "wake_at": _rfc3339(wake)})
        left = (wake - self._j.now()).total_seconds()
        if left <= 0:
            return
        if left <= INLINE_SLEEP:
            await asyncio.sleep(left)
            return
        raise await self._suspend({"until": _rfc3339(wake)})

    # ---- wait for an event ----

    async def wait_for_event(self, name: str, event: str, *, timeout: Duration | None = None) -> Any:
        """Waits for an event named event sent to the run (Client.send_event,
        `cairn runs event`) and returns its payload. The function suspends
        meanwhile. With a timeout, an event that has not come by then is not
        waited for: an error of class timeout is raised (the body may handle
        it). An event sent before the wait starts is kept for it."""
        op = await self._wait(name, event, timeout)
        return await self._resolve(op.get("result"))  # an event's payload may be stored by reference

    async def wait_for_update(self, name: str, update: str, *, timeout: Duration | None = None) -> Received:
        """Waits, as wait_for_event, for an update named update sent to the run
        (Client.send_update, `cairn runs update`) and returns it: answer it
        with reply."""
        op = await self._wait(name, update, timeout)
        return Received(id=op.get("update") or "", input=await self._resolve(op.get("result")))

    async def reply(self, u: Received, answer: Any) -> None:
        """Answers update u with answer: what its sender gets. Recorded once and
        sent at once: a replay does not answer again."""
        id, recs = self._begin("reply", "reply")
        if not recs:
            self._j.record({"id": id, "kind": "reply", "status": "completed", "result": answer, "update": u.id})
        await self._j.flush(None)

    async def _wait(self, name: str, event: str, timeout: Duration | None) -> dict[str, Any]:
        """wait_for_event's operation: its completed record, once the engine
        recorded the event."""
        j = self._j
        id, recs = self._begin(name, "wait")
        deadline: _dt.datetime | None = None
        if not recs:
            op: dict[str, Any] = {"id": id, "kind": "wait", "status": "started"}
            if timeout is not None and seconds(timeout) > 0:
                deadline = self._j.now() + _dt.timedelta(seconds=seconds(timeout))
                op["wake_at"] = _rfc3339(deadline)
            j.record(op)
        elif recs[0].get("wake_at"):
            deadline = _parse_time(recs[0]["wake_at"])
        outcome = _last_outcome(recs)
        # The engine's clock decides a timeout: this attempt was claimed past
        # the deadline, so the engine takes no event for the wait any more.
        claimed = _parse_time(j.lease.expires_at) - _dt.timedelta(milliseconds=j.lease.lease_ttl_ms)
        if outcome is None and recs and deadline is not None and claimed >= deadline:
            why = {
                "class": E.CLASS_TIMEOUT,
                "message": f"no event {_q(event)} by {deadline.astimezone(_dt.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} "
                f"(wait {id})",
            }
            j.record({"id": id, "kind": "wait", "status": "failed", "error": why})
            raise _op_error(why)
        if outcome is not None and outcome["status"] == "completed":
            return outcome
        if outcome is not None:
            raise _op_error(outcome.get("error"))
        sp: dict[str, Any] = {"event": event, "op": id}
        if deadline is not None:
            sp["until"] = _rfc3339(deadline)
        raise await self._suspend(sp)

    async def _resolve(self, v: Any) -> Any:
        """A recorded result stored by reference (one too large for the run
        record: a step's result, an event's payload, an invoked run's output),
        read through the lease and decoded."""
        sc = self._j.sc
        fetch = sc._payload
        if fetch is None or as_payload_ref(v) is None:
            return v
        try:
            v = await fetch(v)
        except (E.CairnError, ValueError) as err:
            raise E.retryable(f"reading a recorded result stored by reference: {err}") from err
        if sc._codec is None:
            return v
        try:
            return open_value(sc._codec, v)
        except CodecError as err:
            raise E.failure(CLASS_CODEC, f"cairn: decrypting a recorded result stored by reference: {err}") from err

    # ---- invoke ----

    async def invoke(self, name: str, workflow: str, input: Any = None, *, version: str | None = None) -> Any:
        """Starts a run of workflow (a DAG or a function, served by any worker in
        any language; version: the newest when the run starts if None) and waits
        for it — the function suspends meanwhile — returning its output, or
        raising its error (its class kept). The run starts once, however often
        the body replays; it is cancelled if the function's run ends first."""
        j = self._j
        inp = _json_copy(input, f"the input of invoke {_q(name)}")
        id, recs = self._begin(name, "invoke")
        if not recs:
            j.record({"id": id, "kind": "invoke", "status": "started"})
        last = _last_outcome(recs)
        if last is not None and last["status"] == "failed":
            raise _op_error(last.get("error"))
        if last is not None:
            return await self._resolve(last.get("result"))  # a large output is stored by reference
        inv: dict[str, Any] = {"workflow": workflow, "input": inp}
        if version:
            inv["version"] = version
        raise await self._suspend({"op": id, "invoke": inv})

    # ---- recorded values ----

    def _value(self, name: str, gen: Callable[[], Any], ok: Callable[[Any], bool], what: str) -> Any:
        j = self._j
        id, recs = self._begin(name, "value")
        if recs:
            v = recs[0].get("result")
            if not ok(v):
                raise j.broken(f"the value recorded for {_q(id)} is not {what}: {v!r}")
            return v
        v = gen()
        j.record({"id": id, "kind": "value", "status": "completed", "result": v})
        return v

    def now(self) -> _dt.datetime:
        """The time (UTC), recorded: a replay sees the same time."""

        def ok(v: Any) -> bool:
            try:
                _parse_time(v)
                return True
            except (ValueError, TypeError):
                return False

        return _parse_time(self._value("now", lambda: _rfc3339(self._j.now()), ok, "a time"))

    def random(self) -> float:
        """A random float in [0, 1), recorded."""
        v = self._value(
            "random", _random.random, lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"
        )
        return float(v)

    def uuid(self) -> str:
        """A random (version 4) UUID, recorded."""
        return str(self._value("uuid", lambda: str(_uuid.uuid4()), lambda v: isinstance(v, str), "a string"))

    def patched(self, id: str) -> bool:
        """Whether the run takes the code path that change id introduced: True
        for a run that reaches it first (the choice is recorded), False for a
        run whose history the code before the change recorded (it still holds
        operations this attempt has not reached). Remove the check once no run
        in flight predates the change::

            if fc.patched("fraud-check"):
                ...  # new code
            else:
                ...  # old code
        """
        j = self._j
        key, recs = self._begin("patch:" + id, "patch")
        if recs:
            return True
        if any(op["id"] not in j.visited for op in j.hist):
            return False  # replaying what the code before the change recorded
        j.record({"id": key, "kind": "patch", "status": "completed"})
        return True

    # ---- branches ----

    async def map(
        self,
        name: str,
        items: Iterable[I],
        fn: Callable[[Durable, I], Awaitable[T]],
        *,
        limit: int = 0,
    ) -> list[T]:
        """Runs fn on each item, at most limit at once (0: all at once), each in
        a scope of its own (its operations' ids are under /<name>#<k>/<index>),
        and returns the outputs in the items' order, or raises the error of the
        first item (by index) that failed (its class kept). A branch that
        sleeps, waits or invokes parks until no branch runs; the function then
        suspends once for all of them. Waits and invokes of several branches
        are taken one per suspension."""
        j = self._j
        j.check()
        k = self._uses.get(name, 0)
        self._uses[name] = k + 1
        base = f"{self._scope}/{name}#{k}"
        xs = list(items)
        n = len(xs)
        if n == 0:
            return []
        lim = n if limit <= 0 or limit > n else limit
        results: list[Any] = [None] * n
        errs: list[BaseException | None] = [None] * n
        tasks: list[asyncio.Task[None]] = []
        nxt = 0  # the next item to start
        ended = 0
        done = asyncio.Event()

        def take() -> None:
            # Starts the next item waiting for a slot, counted as running from
            # then on; called when a slot is free (at the start, or when a
            # branch ended or parked), so a branch waiting for a slot never
            # counts as running and the barrier is never held by one.
            nonlocal nxt
            if nxt >= n:
                return
            i = nxt
            nxt += 1
            j.running += 1
            tasks.append(asyncio.ensure_future(branch(i)))

        async def branch(i: int) -> None:
            nonlocal ended
            released = False

            def release() -> None:  # the slot to the next item, once
                nonlocal released
                if not released:
                    released = True
                    take()

            try:
                results[i] = await fn(Durable(j, f"{base}/{i}", release, self._lost), xs[i])
            except BaseException as e:  # the caller raises it
                errs[i] = e
            finally:
                release()  # hand the slot on before leaving
                await j.leave()
                ended += 1
                if ended == n:
                    done.set()

        j.running -= 1  # the caller waits for the branches
        try:
            for _ in range(lim):
                take()
            try:
                await done.wait()
            except asyncio.CancelledError:
                # Cancelled (the attempt ends): no item starts any more, and
                # the running ones are cancelled and waited for.
                nxt = n
                for t in tasks:
                    t.cancel()
                await asyncio.wait(tasks)
                raise
        finally:
            j.running += 1
        if j.stop is not None:
            raise j.stop
        for i, r in enumerate(errs):
            if isinstance(r, E.Cancelled | asyncio.CancelledError | Suspended | ContinueAsNew):
                raise r
            if r is not None:
                raise E.failure(E.class_of(r), f"{name} item {i}: {E.message_of(r)}") from r
        return results

    async def race(self, name: str, *branches: Callable[[Durable], Awaitable[Any]]) -> tuple[int, Any]:
        """Runs branches at once, each in a scope of its own (see map), and
        returns the index and the result of the one that ends first (its error
        is raised); the others are cancelled (what they recorded stays,
        unread). The winner is recorded: a replay runs only it. A branch that
        sleeps, waits or invokes parks as in map, so a race of a wait against
        a sleep suspends the function until the first of them::

            i, v = await fc.race("approval-or-timeout", wait_approval, sleep_a_day)
        """
        j = self._j
        id, recs = self._begin(name, "value")
        n = len(branches)
        if n == 0:
            return -1, None

        def scope(i: int) -> str:
            return f"{id}/{i}"

        if recs:  # decided: the losers' records stay unread
            w = recs[0].get("result")
            if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w < n:
                raise j.broken(f"race {_q(id)} recorded winner {json.dumps(w)} of {n} branches")
            j.lost(id, scope(w))
            return w, await branches[w](Durable(j, scope(w), None, self._lost))
        lost = [False] * n
        started = [False] * n
        outs: list[Any] = [None] * n
        errs: list[BaseException | None] = [None] * n
        winner = -1
        tasks: list[asyncio.Task[None]] = []

        async def run(i: int) -> None:
            nonlocal winner
            started[i] = True
            try:
                try:
                    outs[i] = await branches[i](Durable(j, scope(i), None, lambda: lost[i] or self._lost()))
                except BaseException as e:  # the winner's is raised
                    errs[i] = e
                err = errs[i]
                if (
                    winner >= 0
                    or isinstance(err, Suspended | asyncio.CancelledError)
                    or j.stop is not None
                    or lost[i]
                    or self._lost()
                    or j.sc._cause is not None
                ):
                    return
                winner = i
                j.record({"id": id, "kind": "value", "status": "completed", "result": i})
                for k in range(n):  # before this branch leaves: no loser counts as parked
                    if k != i:
                        lost[k] = True
                        j.unpark(scope(k))
                        if started[k]:  # one not started yet ends at its first operation
                            tasks[k].cancel()
                j.lost(id, scope(i))
            finally:
                await j.leave()

        j.running += n - 1  # the caller waits for the branches
        tasks.extend(asyncio.ensure_future(run(i)) for i in range(n))
        try:
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            j.running += 1
        if j.stop is not None:
            raise j.stop
        if winner < 0:
            j.check()
            raise _race_lost()
        err = errs[winner]
        if err is not None:
            raise err
        return winner, outs[winner]

    async def parallel(self, name: str, *branches: Callable[[Durable], Awaitable[Any]]) -> list[Any]:
        """Runs branches at once, each in a scope of its own (see map), and
        returns their outputs in order, or raises the first error (by position)."""

        async def run(fc: Durable, b: Callable[[Durable], Awaitable[Any]]) -> Any:
            return await b(fc)

        return await self.map(name, branches, run)


# ---- plain def bodies ----


class _Ops:
    """The operations a plain body's thread has running on the event loop:
    closed (and those in flight cancelled and waited for) when the coroutine
    that waits for the thread is cancelled, so that the thread records
    nothing more."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = False

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Runs make() on the loop and blocks the calling thread until it ends:
        its result, or its error raised here."""
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self.loop:  # blocking here would never end
            raise E.fatal("a SyncDurable operation called on the event loop (in an async def): use the Durable's")
        if self.closed:
            raise asyncio.CancelledError("cairn: the function's attempt ended")

        async def op() -> T:
            if self.closed:
                raise asyncio.CancelledError("cairn: the function's attempt ended")
            t = asyncio.current_task()
            assert t is not None
            self.tasks.add(t)
            try:
                return await make()
            finally:
                self.tasks.discard(t)

        try:
            cf = asyncio.run_coroutine_threadsafe(op(), self.loop)
        except RuntimeError:  # the loop closed
            raise asyncio.CancelledError("cairn: the worker's event loop closed") from None
        try:
            return cf.result()
        except concurrent.futures.CancelledError:
            # The operation was cancelled (the attempt ended, a race was lost):
            # an asyncio cancellation, which `except Exception` lets through.
            raise asyncio.CancelledError("cairn: the operation was cancelled") from None

    async def close(self) -> None:
        self.closed = True
        pending = list(self.tasks)
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.wait(pending)


async def _in_thread(fn: Callable[[_Ops], T]) -> T:
    """Runs fn on a thread of its own (not a pool's: a body blocked on its
    operations must not hold a slot its steps' threads need), its operations
    on this event loop, and returns what it returns. Cancelled, the thread's
    operations in flight are cancelled and waited for (a step a drain cuts
    off still records its result) and its next ones raise."""
    loop = asyncio.get_running_loop()
    ops = _Ops(loop)
    fut: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(v: Any, e: BaseException | None) -> None:
        if fut.done():
            return
        if e is None:
            fut.set_result(v)
        elif isinstance(e, asyncio.CancelledError):
            fut.cancel()
        else:
            fut.set_exception(e)

    def target() -> None:
        v: Any = None
        e: BaseException | None = None
        try:
            v = ctx.run(fn, ops)
        except BaseException as x:  # the loop raises it
            e = x
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, v, e)

    threading.Thread(target=target, name="cairn-function", daemon=True).start()
    try:
        return await fut
    except asyncio.CancelledError:
        await ops.close()
        raise


class _StepOptions(TypedDict, total=False):
    """The options of :meth:`Durable.step`, which SyncDurable.step passes on."""

    retry: RetryPolicy | None
    timeout: Duration | None
    at_most_once: bool


class SyncDurable:
    """A plain ``def`` function body's context: :class:`Durable`'s operations,
    each blocking until it ends. The body runs on a thread of its own; each
    operation runs on the worker's event loop as the ``async def`` form's
    does, so the ids, records and checkpoints are the same (a history one
    form recorded replays in the other). A suspension raises
    :class:`Suspended` from the operation, as in the async form; the body
    must let it through. ``fn`` of a step is as in :meth:`Durable.step`; a
    branch of :meth:`map`, :meth:`parallel` or :meth:`race` is a plain
    function given the branch's SyncDurable, run on a thread of its own."""

    def __init__(self, fc: Durable, ops: _Ops) -> None:
        self._fc = fc
        self._ops = ops

    @property
    def durable(self) -> Durable:
        """The async form of this context (its methods are coroutines of the worker's loop)."""
        return self._fc

    @property
    def info(self) -> StepInfo:
        return self._fc.info

    @property
    def log(self) -> logging.LoggerAdapter[logging.Logger]:
        return self._fc.log

    @property
    def input(self) -> Any:
        return self._fc.input

    @property
    def step_context(self) -> StepContext:
        return self._fc.step_context

    def _now(self, f: Callable[[], T]) -> T:
        """A synchronous operation of Durable, run on the loop (it may arm the flush timer)."""

        async def go() -> T:
            return f()

        return self._ops.call(go)

    def step(self, name: str, fn: Callable[[], Awaitable[T]] | Callable[[], T], **opts: Unpack[_StepOptions]) -> T:
        """See :meth:`Durable.step`."""
        return self._ops.call(lambda: self._fc.step(name, fn, **opts))

    def sleep(self, name: str, seconds_: Duration) -> None:
        """See :meth:`Durable.sleep`."""
        self._ops.call(lambda: self._fc.sleep(name, seconds_))

    def sleep_until(self, name: str, t: _dt.datetime) -> None:
        """See :meth:`Durable.sleep_until`."""
        self._ops.call(lambda: self._fc.sleep_until(name, t))

    def wait_for_event(self, name: str, event: str, *, timeout: Duration | None = None) -> Any:
        """See :meth:`Durable.wait_for_event`."""
        return self._ops.call(lambda: self._fc.wait_for_event(name, event, timeout=timeout))

    def wait_for_update(self, name: str, update: str, *, timeout: Duration | None = None) -> Received:
        """See :meth:`Durable.wait_for_update`."""
        return self._ops.call(lambda: self._fc.wait_for_update(name, update, timeout=timeout))

    def reply(self, u: Received, answer: Any) -> None:
        """See :meth:`Durable.reply`."""
        self._ops.call(lambda: self._fc.reply(u, answer))

    def invoke(self, name: str, workflow: str, input: Any = None, *, version: str | None = None) -> Any:
        """See :meth:`Durable.invoke`."""
        return self._ops.call(lambda: self._fc.invoke(name, workflow, input, version=version))

    def now(self) -> _dt.datetime:
        return self._now(self._fc.now)

    def random(self) -> float:
        return self._now(self._fc.random)

    def uuid(self) -> str:
        return self._now(self._fc.uuid)

    def patched(self, id: str) -> bool:
        """See :meth:`Durable.patched`."""
        return self._now(lambda: self._fc.patched(id))

    def map(self, name: str, items: Iterable[I], fn: Callable[[SyncDurable, I], T], *, limit: int = 0) -> list[T]:
        """See :meth:`Durable.map`; fn is ``def fn(fc, item)``, each running item on a thread of its own."""

        async def branch(fc: Durable, x: I) -> T:
            return await _in_thread(lambda ops: fn(SyncDurable(fc, ops), x))

        return self._ops.call(lambda: self._fc.map(name, items, branch, limit=limit))

    def parallel(self, name: str, *branches: Callable[[SyncDurable], Any]) -> list[Any]:
        """See :meth:`Durable.parallel`; each branch is ``def b(fc)``."""
        return self._ops.call(lambda: self._fc.parallel(name, *_threaded(branches)))

    def race(self, name: str, *branches: Callable[[SyncDurable], Any]) -> tuple[int, Any]:
        """See :meth:`Durable.race`; each branch is ``def b(fc)``. A losing
        branch's next operation raises (its thread is not stopped otherwise)."""
        return self._ops.call(lambda: self._fc.race(name, *_threaded(branches)))


def _threaded(branches: Iterable[Callable[[SyncDurable], Any]]) -> list[Callable[[Durable], Awaitable[Any]]]:
    """Plain branches as the async form's: each on a thread of its own."""

    def one(b: Callable[[SyncDurable], Any]) -> Callable[[Durable], Awaitable[Any]]:
        async def run(fc: Durable) -> Any:
            return await _in_thread(lambda ops: b(SyncDurable(fc, ops)))

        return run

    return [one(b) for b in branches]


async def _drive(sc: StepContext, body: FunctionBody) -> Any:
    """Runs a function body for one attempt of its driver step."""
    j = _Journal(sc)
    fc = Durable(j)
    out: Any = None
    err: BaseException | None = None
    try:
        try:
            out = await body(fc, sc.input)
        except asyncio.CancelledError as e:
            if sc._cause is None or not _keeps_results(sc._cause):
                raise
            err = e  # what the body recorded is sent below
        except BaseException as e:
            err = e
        if isinstance(sc._cause, E.Shutdown):
            # The worker is draining: the function goes on in another attempt
            # (no failure spent), from what it recorded.
            await j.flush({"until": _rfc3339(j.now())})
            raise Suspended()
        stop = j.stop
        if stop is None and err is None:
            stop = j.unreached()
        if stop is not None:
            raise stop
        try:
            await j.flush(None)
        except BaseException:
            if err is None:
                raise
        if isinstance(err, ContinueAsNew):
            sc._continue_as = (err.input,)  # the complete carries it instead of an output
            return None
        if err is not None:
            raise err
        return out
    finally:
        j.stop_timer()
        for t in list(j.bg):
            t.cancel()


def _plain(body: SyncFunctionBody) -> FunctionBody:
    """A plain def body as an async one: on a thread of its own, with a SyncDurable."""

    async def run(fc: Durable, inp: Any) -> Any:
        out = await _in_thread(lambda ops: body(SyncDurable(fc, ops), inp))
        if inspect.isawaitable(out):
            if inspect.iscoroutine(out):
                out.close()
            raise E.fatal("a plain def function body returned an awaitable: make it an async def")
        return out

    return run


def _handler(body: FunctionBody | SyncFunctionBody) -> Callable[[StepContext, Any], Awaitable[Any]]:
    if not callable(body):
        raise TypeError("cairn: a durable function's body must be a function (async def or def)")
    run = cast(FunctionBody, body) if inspect.iscoroutinefunction(body) else _plain(cast(SyncFunctionBody, body))

    async def driver(sc: StepContext, _input: Any) -> Any:
        return await _drive(sc, run)

    driver._cairn_function = True  # type: ignore[attr-defined]
    return driver


def add_function(wf: Workflow, id: str, body: FunctionBody | SyncFunctionBody, opts: dict[str, Any]) -> Workflow:
    """Workflow.function's implementation."""
    wf._handler(id, _handler(body))
    return wf._add({"id": id, "kind": "function"}, opts, wf._steps)


def function(name: str, version: str, body: FunctionBody | SyncFunctionBody, **opts: Any) -> Workflow:
    """A workflow of one durable function, step "main". Unlike a task, the
    function is not retried when its body raises (an operation's own retries
    are its step's): pass retry= to change that. Options: retry, timeout,
    max_deliveries, concurrency, rate_limit, priority; description, deadline
    and concurrency of the workflow go to :func:`cairn.workflow` — build with
    ``cairn.workflow(...).function("main", body)`` for them."""
    opts.setdefault("retry", RetryPolicy(max_attempts=1))
    return Workflow(name, version).function("main", body, **opts)


__all__ = [
    "CLASS_LOST",
    "CLASS_NONDETERMINISM",
    "ContinueAsNew",
    "Durable",
    "FunctionBody",
    "Suspended",
    "SyncDurable",
    "SyncFunctionBody",
    "function",
    "seconds",
]

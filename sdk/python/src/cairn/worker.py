"""The worker: registers definitions, claims leases (reserving a slot for
each first), runs step bodies, heartbeats every held lease in one batched
call, reports complete or fail (asking for the slot's next lease on
complete: eager dispatch), answers each 409 by its reason, and drains on
shutdown. The semantics are the Go SDK's (docs/SDK.md, "The worker");
docs/SDK-PY.md for Python.

One implementation serves both forms: the protocol runs on an asyncio event
loop; a plain ``def`` body runs on the worker's thread pool (the synchronous
form: :meth:`Worker.serve` blocks), an ``async def`` body on the loop (the
asyncio form: ``await worker.serve_async()``). A worker may mix both.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as _dt
import functools
import inspect
import json
import logging
import os
import random
import re
import signal
import socket
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from . import errors as E
from ._api.api.workers import (
    checkpoint_step,
    claim_steps,
    complete_step,
    fail_step,
    get_lease_payload,
    heartbeat_steps,
    interrupt_step,
    register_worker,
    step_started,
    stop_worker,
)
from ._api.models import (
    CheckpointRequest,
    ClaimNext,
    ClaimRequest,
    CompleteRequest,
    CompleteRequestAttributes,
    CompleteRequestStatePatch,
    ErrorInfo,
    FailRequest,
    FailRequestStatePatch,
    HeartbeatManyRequest,
    InterruptRequest,
    InterruptRequestStatePatch,
    Lease,
    RegisterRequest,
    RegisterRequestLabels,
    RegisterResponse,
)
from ._api.models import ContinueAsNew as WireContinueAsNew
from ._api.models import Usage as WireUsage
from ._api.models import Workflow as WireWorkflow
from ._api.types import UNSET, Response, Unset
from .client import AsyncClient, Client, attribute_values
from .codec import CLASS_CODEC, CodecError, Keyring, open_value, seal_map, seal_top
from .function import Suspended
from .payloads import as_payload_ref
from .stream import Sender
from .usage import USAGE_PROCESSOR, Usage, _Acc, install
from .workflow import Handler, Workflow

DEFAULT_CONCURRENCY = 4
DEFAULT_DRAIN_TIMEOUT = 30.0
DEFAULT_CLAIM_WAIT = 20.0
# How long the drain gives bodies it cancelled to return and report.
CUT_OFF_WAIT = 1.0
MAX_CLAIM_PAUSE = 60.0
MAX_CLAIM = 100  # the most leases one claim may ask for (the API's maximum)

_INSTRUMENTATION = "cairn.sdk"
_unnamed = 0
_unnamed_lock = threading.Lock()
_BAD_ID = re.compile(r"[^A-Za-z0-9_.:@-]")


def _sanitize_id(id: str) -> str:
    id = _BAD_ID.sub("-", id)
    if not id or not id[0].isalnum():
        id = "w" + id
    return id[:128]


def _default_id() -> str:
    global _unnamed
    with _unnamed_lock:
        _unnamed += 1
        n = _unnamed
    base = f"{socket.gethostname() or 'worker'}-{os.getpid()}"
    # Not the process's first: an id of its own. The engine keeps one record
    # per id and avoids a worker by id after an unservable fail, so workers
    # sharing one would take each other's steps and be avoided together.
    return base if n == 1 else f"{base}-{n}"


@dataclass(frozen=True)
class StepInfo:
    """The attempt a body runs."""

    run: str
    workflow: str
    version: str
    step: str
    #: Counts from 1; every lease is a new attempt.
    attempt: int
    #: at_least_once or at_most_once.
    delivery: str
    #: Stable across every attempt of this step of this run: pass it to side effects.
    idempotency_key: str
    correlation: str
    worker: str
    lease: str
    #: The W3C traceparent of the engine's step span.
    traceparent: str
    #: The attempt fails with class timeout then (None: no timeout).
    timeout_at: _dt.datetime | None
    #: For an item of a map step (step names the map step): its index; else -1.
    item: int


class StepContext:
    """What a body gets besides its input: the attempt, earlier outputs, the run
    state, the setters for what the engine records on completion, a logger
    bound to the attempt, and cancellation.

    A body is cancelled when its lease is lost (cause LeaseLost), the run ends
    (RunEnded), the attempt times out (AttemptTimeout) or the worker's drain
    timeout passes on shutdown (Shutdown). An ``async def`` body gets an
    asyncio cancellation; a plain body should look at :attr:`cancelled` (or
    call :meth:`raise_if_cancelled`, or :meth:`wait` instead of time.sleep)
    between pieces of work.
    """

    def __init__(
        self,
        info: StepInfo,
        input: Any,
        outputs: dict[str, Any],
        state: dict[str, Any],
        log: logging.LoggerAdapter[logging.Logger],
        span: trace.Span,
        tracer: trace.Tracer,
    ) -> None:
        self.info = info
        self.input = input
        self.log = log
        self.span = span
        self.tracer = tracer
        self._outputs = outputs
        self._state = state
        self._lock = threading.Lock()
        self._patch: dict[str, Any] = {}
        self._attrs: dict[str, Any] = {}
        self._explicit: Usage | None = None
        self._summary: Any = UNSET
        self._acc = _Acc()
        self._cancelled = threading.Event()
        self._cause: E.Cancelled | None = None
        # A function step's driver: its lease (the history) and the checkpoint call.
        self._lease: Lease | None = None
        self._checkpoint: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        # ... and the read of a value stored by reference, through the lease.
        self._payload: Callable[[Any], Awaitable[Any]] | None = None
        # The worker's keyring: outputs and state values are decoded when read.
        self._codec: Keyring | None = None
        self._opened: set[tuple[str, str]] = set()
        # The input of the run a function's run continues as (ContinueAsNew):
        # its complete carries it instead of an output.
        self._continue_as: tuple[Any] | None = None
        # Progress: the lease's sender and the worker's loop (async bodies run on it).
        self._progress: Sender | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The step was interrupted (raise Interrupt(payload)) and resumed: true on every
        #: attempt until it completes or interrupts again; resume is the answer,
        #: interrupted the payload it last interrupted with.
        self.resumed = False
        self.resume: Any = None
        self.interrupted: Any = None

    def _open(self, m: dict[str, Any], kind: str, key: str) -> Any:
        """m[key], its encrypted values decoded once read (class codec when one does not decrypt)."""
        if self._codec is None or (kind, key) in self._opened:
            return m[key]
        with self._lock:
            if (kind, key) not in self._opened:
                try:
                    m[key] = open_value(self._codec, m[key])
                except CodecError as err:
                    what = f"the output of step {key}" if kind == "o" else f"the run state {key}"
                    raise E.failure(CLASS_CODEC, f"cairn: decrypting {what}: {err}") from err
                self._opened.add((kind, key))
            return m[key]

    @property
    def idempotency_key(self) -> str:
        return self.info.idempotency_key

    def output(self, step: str, default: Any = None) -> Any:
        """An earlier step's output (one this step depends on, directly or not)."""
        return self._open(self._outputs, "o", step) if step in self._outputs else default

    def outputs(self) -> dict[str, Any]:
        return {k: self._open(self._outputs, "o", k) for k in list(self._outputs)}

    def state(self, key: str, default: Any = None) -> Any:
        """A run-state value, as it was when the lease was made."""
        return self._open(self._state, "s", key) if key in self._state else default

    def state_map(self) -> dict[str, Any]:
        return {k: self._open(self._state, "s", k) for k in list(self._state)}

    def set_state_patch(self, patch: Mapping[str, Any]) -> None:
        """Top-level keys merged into the run state when the attempt ends (on failure too)."""
        json.dumps(dict(patch))  # refuse what does not encode now, not at the end
        with self._lock:
            self._patch.update(patch)

    def set_state(self, key: str, value: Any) -> None:
        self.set_state_patch({key: value})

    def set_attributes(self, attrs: Mapping[str, Any]) -> None:
        """Sets the run's search attributes when the attempt completes (str, int, float, bool or
        datetime each; None removes one); later calls replace earlier values of a name."""
        values = attribute_values(attrs)
        json.dumps(values)  # refuse what does not encode now, not at the end
        with self._lock:
            self._attrs.update(values)

    def set_usage(self, u: Usage) -> None:
        """Records what the attempt consumed; overrides the usage summed from spans."""
        with self._lock:
            self._explicit = u.copy()

    def set_summary(self, value: Any) -> None:
        """A short summary of the attempt (any JSON value, at most 4 KiB encoded), sent with its
        complete or fail and kept on the attempt for timelines and audits; the flow never reads it."""
        n = len(json.dumps(value).encode())
        if n > 4096:
            raise ValueError(f"cairn: a summary of {n} bytes is over the 4096-byte limit")
        with self._lock:
            self._summary = value

    def progress(self, value: Any) -> Awaitable[None]:
        """Publishes value (any JSON value, at most 16 KiB) to the watchers of
        the step's run (Client.stream, the dashboard, ``cairn runs watch``).
        Nothing is stored, and the value is sent as it is (not encrypted). A
        lease may send 50 values a second; beyond, progress waits as the server
        asks (Retry-After-Ms) and sends again, so values keep their order.

        In a plain ``def`` body it returns once the value is sent (what it
        returns need not be awaited); in an ``async def`` body await it:
        ``await ctx.progress({"percent": 40})``. Raises APIError (reason fenced
        or run_terminal) when the attempt is over, the cancellation's cause
        when the body is cancelled while it waits, TypeError when the value
        does not encode as JSON."""
        s = self._progress
        if s is None:
            raise RuntimeError("cairn: progress needs a step body a worker runs")
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and loop is self._loop:
            return s.asend(value)
        if loop is not None:  # a loop of the body's own: the blocking send on a thread
            return loop.run_in_executor(None, s.send, value, self._pause)
        s.send(value, self._pause)
        return _SENT

    def _pause(self, seconds: float) -> None:
        """Sleeps; raises the cause when the body is cancelled first."""
        if self._cancelled.wait(seconds):
            raise self._cause or E.Shutdown()

    # ---- cancellation ----

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def cause(self) -> E.Cancelled | None:
        """Why the body was cancelled, or None."""
        return self._cause

    def raise_if_cancelled(self) -> None:
        if self._cause is not None:
            raise self._cause

    def wait(self, seconds: float) -> bool:
        """Sleeps up to seconds in a plain body; True (at once) when cancelled."""
        return self._cancelled.wait(seconds)

    def _cancel(self, cause: E.Cancelled) -> bool:
        with self._lock:
            if self._cause is not None:
                return False
            self._cause = cause
        self._cancelled.set()
        return True

    def _ended(self) -> tuple[dict[str, Any], Usage]:
        with self._lock:
            patch = dict(self._patch)
            if self._explicit is not None:
                return patch, self._explicit.copy()
        return patch, self._acc.total()


class _Sent:
    """What progress returns in a plain body: the value was sent."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


_SENT = _Sent()


class _Attempt:
    """One lease the worker holds."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self.finished = False  # published or dropped: nothing more goes out for it
        self.started = False  # the engine acknowledged started
        self.cause: E.Cancelled | None = None
        self.ctx: StepContext | None = None
        self.task: asyncio.Task[Any] | None = None  # an async body's task
        self.settled = asyncio.Event()

    def finish(self) -> bool:
        """Claims the right to publish (or drop) the attempt's outcome."""
        if self.finished:
            return False
        self.finished = True
        return True

    def cancel(self, cause: E.Cancelled) -> None:
        if self.cause is None:
            self.cause = cause
        if self.ctx is not None and self.ctx._cancel(cause) and self.task is not None:
            self.task.cancel(str(cause))


class _Backoff:
    """Exponential backoff with jitter (half to all of the current wait)."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi, self.cur = lo, hi, 0.0

    def reset(self) -> None:
        self.cur = 0.0

    def next(self) -> float:
        self.cur = self.lo if self.cur == 0 else min(self.cur * 2, self.hi)
        return self.cur / 2 + random.uniform(0, self.cur / 2)


def _reason(err: BaseException) -> str:
    return E.reason_of(err)


class Worker:
    """Serves the task and map steps of the workflows registered with it.

    ``Worker(client)`` takes the server, key and keyring of a Client or
    AsyncClient (or server=/key=/codec=, else $CAIRN_SERVER and $CAIRN_KEY). :meth:`serve` blocks
    until :meth:`stop` or SIGTERM/SIGINT, then drains; :meth:`serve_async` is
    the same on a running event loop. :attr:`ready` is set once the worker is
    registered and claims.
    """

    def __init__(
        self,
        client: Client | AsyncClient | None = None,
        *,
        server: str | None = None,
        key: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        name: str | None = None,
        logger: logging.Logger | None = None,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        claim_wait: float = DEFAULT_CLAIM_WAIT,
        labels: dict[str, str] | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        codec: Keyring | None = None,
    ) -> None:
        if client is not None:
            server, key = client.server, client.key
            if codec is None:
                codec = client.codec
        #: The keyring the worker encrypts what its steps write with and decodes
        #: what they read with [its client's] (client-side encryption).
        self.codec = codec
        self._server = server
        self._key = key
        self.id = _sanitize_id(name) if name else _sanitize_id(_default_id())
        self.concurrency = max(1, concurrency)
        self.drain_timeout = drain_timeout
        self.claim_wait = claim_wait
        self.labels = labels
        self._logger = logger or logging.getLogger("cairn.worker")
        self.log = logging.LoggerAdapter(self._logger, {"worker": self.id})
        self._tp = tracer_provider
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(_INSTRUMENTATION)
        self._m_steps = meter.create_counter("cairn.worker.steps", description="Step attempts run, by outcome.")
        self._m_duration = meter.create_histogram("cairn.worker.step.duration", unit="s", description="Body run time.")
        self._m_leases = meter.create_up_down_counter("cairn.worker.leases", description="Leases held.")
        self._defs: list[Workflow] = []
        self._handlers: dict[tuple[str, str, str], Handler] = {}
        self.ready = threading.Event()
        self._serving = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._stop_requested = False
        self._inflight: dict[str, _Attempt] = {}
        self._ended: dict[str, float] = {}

    def register(self, *defs: Workflow) -> Worker:
        """Adds workflows this worker serves. Call it before serve."""
        self._defs.extend(defs)
        return self

    def _clear_of(self, workflow: str, version: str | None) -> list[str]:
        """The clear keys of a workflow this worker serves (version None: the one
        registered version of that name, if only one)."""
        found = [d for d in self._defs if d.name == workflow and (not version or d.version == version)]
        return found[0].clear if len(found) == 1 else []

    @property
    def in_flight(self) -> int:
        """Leases held: never more than the concurrency."""
        return len(self._inflight)

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self.ready.wait(timeout)

    def stop(self) -> None:
        """Stops the worker from any thread: no more claims, then the drain."""
        self._stop_requested = True
        loop, ev = self._loop, self._stopping
        if loop is not None and ev is not None:
            loop.call_soon_threadsafe(ev.set)

    def serve(self, handle_signals: bool = True) -> None:
        """Registers, then claims and runs steps until stop(), or SIGTERM/SIGINT
        with handle_signals (on the main thread); then drains: running bodies
        get drain_timeout seconds to finish and report, the rest are cancelled
        (Shutdown) and reported as interrupted."""
        asyncio.run(self.serve_async(handle_signals=handle_signals))

    async def serve_async(self, handle_signals: bool = False) -> None:
        """serve on the running event loop."""
        if not self._serving.acquire(blocking=False):
            raise RuntimeError("cairn: serve is already running on this worker")
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._stopping = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        signals: list[signal.Signals] = []
        if handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._on_signal)
                    signals.append(sig)
                except (NotImplementedError, RuntimeError):
                    pass
        try:
            await self._serve()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
            self.ready.clear()
            self._loop = None
            self._stop_requested = False
            self._serving.release()

    def _on_signal(self) -> None:
        self.log.info("signal received: draining")
        if self._stopping is not None:
            self._stopping.set()

    # ---- serve ----

    def _prepare(self) -> list[dict[str, Any]]:
        if not self._defs:
            raise ValueError("cairn: the worker serves no workflow: call register before serve")
        seen: set[str] = set()
        wfs = []
        self._handlers = {}
        for d in self._defs:
            key = f"{d.name}@{d.version}"
            if key in seen:
                raise ValueError(f"cairn: workflow {key} registered twice with this worker")
            seen.add(key)
            for step, h in d.handlers.items():
                self._handlers[(d.name, d.version, step)] = h
            wfs.append(d.definition())
        return wfs

    async def _serve(self) -> None:
        wfs = self._prepare()
        assert self._stopping is not None
        # The protocol's calls go through the blocking client on threads of
        # their own: httpx's blocking transport costs well under half the CPU
        # of its asyncio one per request, and a busy worker makes one request
        # per step (complete, asking for the next lease).
        self.c = Client(self._server, self._key)
        self.api = self.c.api
        # Claims, held up to claim_wait, go through the asyncio client: a
        # stop cancels the one held.
        self.ac = AsyncClient(self._server, self._key)
        self._io = ThreadPoolExecutor(max_workers=self.concurrency + 4, thread_name_prefix=f"cairn-io-{self.id}")
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix=f"cairn-{self.id}")
        self._inflight = {}
        self._ended = {}
        self._side_tasks: set[asyncio.Task[None]] = set()
        self._free = self.concurrency
        self._slot_freed = asyncio.Event()
        tp = self._tp or trace.get_tracer_provider()
        install(tp)
        # Without an SDK provider every span is a no-op: skip reading the
        # lease's traceparent, a cost per step for nothing.
        self._tracing = isinstance(tp, SDKTracerProvider) or not isinstance(tp, trace.ProxyTracerProvider)
        self.tracer = tp.get_tracer(_INSTRUMENTATION)
        try:
            reg = await self._register(wfs)
            if reg is None:
                return
            self.hb_every = reg.heartbeat_ms / 1000 if reg.heartbeat_ms > 0 else 10.0
            self.lease_ttl = reg.lease_ttl_ms / 1000 if reg.lease_ttl_ms / 1000 > self.hb_every else 3 * self.hb_every
            self.log.info(
                "worker serving: %d workflows, concurrency %d, heartbeat %.1fs, lease ttl %.1fs",
                len(wfs),
                self.concurrency,
                self.hb_every,
                self.lease_ttl,
            )
            self._claiming = True
            self._publishing = True
            bodies: set[asyncio.Task[None]] = set()
            hb = asyncio.create_task(self._heartbeat_loop())
            self.ready.set()
            err: BaseException | None = None
            try:
                await self._claim_loops(wfs, bodies)
            except E.CairnError as e:
                err = e
            self._claiming = False
            await self._drain(bodies)
            hb.cancel()
            await asyncio.gather(hb, return_exceptions=True)
            # Say so, so that the worker is listed as gone at once; best effort, bounded.
            try:
                await asyncio.wait_for(self._call(stop_worker, worker=self.id), 5)
            except Exception as e:
                self.log.debug("could not say the worker stopped: %s", e)
            if err is not None:
                self.log.error("worker stopped: %s", err)
                raise err
            self.log.info("worker stopped")
        finally:
            self._pool.shutdown(wait=False)
            # A claim abandoned on stop may still be held on an I/O thread.
            self._io.shutdown(wait=False, cancel_futures=True)
            self.c.close()
            await self.ac.aclose()

    async def _call(self, op: Any, **kwargs: Any) -> Any:
        """Calls a generated operation; its parsed 2xx answer, or an APIError / TransportError."""
        call = functools.partial(op.sync_detailed, client=self.api, **kwargs)
        try:
            resp: Response[Any] = await asyncio.get_running_loop().run_in_executor(self._io, call)
        except httpx.TransportError as err:
            raise E.TransportError(self.c.server, err) from err
        if 200 <= resp.status_code < 300:
            return resp.parsed
        raise E.APIError.from_body(int(resp.status_code), resp.content)

    async def _call_async(self, op: Any, **kwargs: Any) -> Any:
        """_call through the asyncio client: cancellable."""
        try:
            resp: Response[Any] = await op.asyncio_detailed(client=self.ac.api, **kwargs)
        except httpx.TransportError as err:
            raise E.TransportError(self.c.server, err) from err
        if 200 <= resp.status_code < 300:
            return resp.parsed
        raise E.APIError.from_body(int(resp.status_code), resp.content)

    async def _sleep_or_stop(self, seconds: float) -> bool:
        """Sleeps; False when the worker started stopping first."""
        assert self._stopping is not None
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
            return False
        except TimeoutError:
            return True

    async def _register(self, wfs: list[dict[str, Any]]) -> RegisterResponse | None:
        body = RegisterRequest(
            workflows=[WireWorkflow.from_dict(w) for w in wfs],
            worker_id=self.id,
            labels=RegisterRequestLabels.from_dict(self.labels) if self.labels else UNSET,
        )
        b = _Backoff(0.2, 5.0)
        assert self._stopping is not None
        while True:
            if self._stopping.is_set():
                return None
            try:
                r: RegisterResponse = await self._call(register_worker, body=body)
                return r
            except E.CairnError as err:
                if not E.temporary(err):
                    raise E.CairnError(f"cairn: registering worker {self.id}: {err}") from err
                self.log.warning("registering failed; retrying: %s", err)
            if not await self._sleep_or_stop(b.next()):
                return None

    # ---- slots and claims ----

    async def _reserve(self) -> int:
        """Reserves slots before a claim: waits for one, takes all free up to
        MAX_CLAIM (the API's maximum per claim; more slots hold more claims).
        0 once stopping."""
        assert self._stopping is not None
        while self._free == 0:
            if self._stopping.is_set():
                return 0
            self._slot_freed.clear()
            stop = asyncio.ensure_future(self._stopping.wait())
            freed = asyncio.ensure_future(self._slot_freed.wait())
            await asyncio.wait({stop, freed}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            freed.cancel()
        if self._stopping.is_set():
            return 0
        n = min(self._free, MAX_CLAIM)
        self._free -= n
        return n

    def _release(self, n: int = 1) -> None:
        self._free += n
        self._slot_freed.set()

    async def _claim_loops(self, wfs: list[dict[str, Any]], bodies: set[asyncio.Task[None]]) -> None:
        """Runs a claim loop per MAX_CLAIM slots, so that a worker with more
        free slots than one claim may ask for holds claims for them all (a
        start handed to a held claim costs no lease write). A loop that
        fails stops the worker, and the others with it."""
        assert self._stopping is not None
        loops = max(1, -(-self.concurrency // MAX_CLAIM))
        tasks = [asyncio.create_task(self._claim_loop(wfs, bodies)) for _ in range(loops)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            self._stopping.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _claim_loop(self, wfs: list[dict[str, Any]], bodies: set[asyncio.Task[None]]) -> None:
        assert self._stopping is not None
        failures, quick, idle = _Backoff(0.2, 10.0), _Backoff(0.05, 1.0), _Backoff(1.0, 1.0)
        while True:
            n = await self._reserve()
            if n == 0:
                return
            began = time.monotonic()
            try:
                leases, pause = await self._claim(n)
            except E.CairnError as err:
                self._release(n)
                if self._stopping.is_set():
                    return
                if E.is_not_found(err):
                    self.log.warning("the server does not know this worker; registering again: %s", err)
                    if await self._register(wfs) is None:
                        return
                    continue
                if isinstance(err, E.APIError) and err.status in (401, 403):
                    raise E.CairnError(f"cairn: claiming steps: {err}") from err
                self.log.warning("claim failed; retrying: %s", err)
                if not await self._sleep_or_stop(failures.next()):
                    return
                continue
            failures.reset()
            self._start_bodies(leases, n, bodies)
            if not leases and pause > 0:
                # The server asks for a pause between empty claims (on Lambda a
                # held claim is an execution environment): from 1 s doubling up
                # to the pause, each wait half to all of it; leases reset it.
                if idle.hi != pause:
                    idle.lo, idle.hi = min(1.0, pause), pause
                    idle.cur = min(idle.cur, pause)
                if not await self._sleep_or_stop(idle.next()):
                    return
            elif not leases and time.monotonic() - began < 0.05:
                # Answered empty at once (draining, or holding no claims): do not spin.
                if not await self._sleep_or_stop(quick.next()):
                    return
            else:
                quick.reset()
                if leases:
                    idle.reset()

    async def _claim(self, n: int) -> tuple[list[Lease], float]:
        assert self._stopping is not None
        body = ClaimRequest(worker_id=self.id, max_=n, wait_ms=int(self.claim_wait * 1000))
        claim = asyncio.ensure_future(self._call_async(claim_steps, body=body))
        stop = asyncio.ensure_future(self._stopping.wait())
        done, _ = await asyncio.wait({claim, stop}, timeout=self.claim_wait + 30, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if claim not in done:
            # Stopping (or the claim hung): the claim is abandoned; a lease it
            # would have handed out is recovered by the reaper at its expiry.
            claim.cancel()
            await asyncio.gather(claim, return_exceptions=True)
            if self._stopping.is_set():
                return [], 0.0
            raise E.TransportError(self.c.server, TimeoutError("claim got no answer"))
        r = claim.result()
        pause = 0.0
        if not isinstance(r.pause_ms, Unset) and r.pause_ms > 0:
            pause = min(r.pause_ms / 1000, MAX_CLAIM_PAUSE)
        return list(r.leases), pause

    def _start_bodies(self, leases: list[Lease], n: int, bodies: set[asyncio.Task[None]]) -> None:
        self._release(max(0, n - len(leases)))
        for i, lease in enumerate(leases):
            a = self._track(lease)
            if i >= n:
                # More leases than asked for: a server bug. Never run more than
                # the slots reserved; hand them back at once.
                self.log.error("the server returned more leases than claimed (%d of %d)", len(leases), n)
                self._spawn(self._give_back(a))
                continue
            t = asyncio.create_task(self._slot(a))
            bodies.add(t)
            t.add_done_callback(bodies.discard)

    async def _give_back(self, a: _Attempt) -> None:
        try:
            await self._publish_fail(a, E.CLASS_UNSERVABLE, f"worker {self.id} claimed fewer leases than it got")
        finally:
            self._untrack(a)

    async def _slot(self, a: _Attempt | None) -> None:
        """Runs leases on one slot: the first, then each a complete handed back."""
        try:
            while a is not None:
                try:
                    a = await self._handle(a)
                except Exception:
                    self.log.exception("step dispatch failed")
                    a = None
        finally:
            self._release()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        t = asyncio.create_task(coro)
        self._side_tasks.add(t)
        t.add_done_callback(self._side_tasks.discard)

    def _track(self, lease: Lease) -> _Attempt:
        a = _Attempt(lease)
        self._inflight[lease.id] = a
        self._m_leases.add(1)
        return a

    def _untrack(self, a: _Attempt) -> None:
        if self._inflight.pop(a.lease.id, None) is not None:
            self._m_leases.add(-1)
        a.settled.set()

    def _run_ended(self, run: str) -> None:
        """A run ended: cancel its bodies and drop its later leases."""
        now = time.monotonic()
        self._ended[run] = now
        for r, at in list(self._ended.items()):
            if now - at > 600:
                del self._ended[r]
        for a in list(self._inflight.values()):
            if a.lease.run == run:
                a.cancel(E.RunEnded(run))

    # ---- one attempt ----

    def _lease_log(self, lease: Lease) -> logging.LoggerAdapter[logging.Logger]:
        return logging.LoggerAdapter(
            self._logger,
            {
                "worker": self.id,
                "run": lease.run,
                "workflow": lease.workflow,
                "version": lease.version,
                "step": lease.step,
                "attempt": lease.attempt,
            },
        )

    async def _handle(self, a: _Attempt) -> _Attempt | None:
        """Runs one lease to its end: started, the body, complete or fail. Returns
        the next attempt when the complete handed one back (eager dispatch)."""
        try:
            return await self._handle_inner(a)
        finally:
            self._untrack(a)

    async def _handle_inner(self, a: _Attempt) -> _Attempt | None:
        l = a.lease  # noqa: E741
        log = self._lease_log(l)
        h = self._handlers.get((l.workflow, l.version, l.step))
        if h is None:
            log.warning("failing a lease this worker does not serve as unservable; the engine offers it to another")
            self._m_steps.add(1, {"outcome": "unservable"})
            await self._publish_fail(
                a, E.CLASS_UNSERVABLE, f"worker {self.id} does not serve step {l.step} of {l.workflow}@{l.version}"
            )
            return None
        if l.run in self._ended:
            a.finish()
            log.info("dropping a lease of a run that ended")
            return None
        input_, outputs, state, unresolved = await self._resolve(a)  # before started: costs no attempt
        if not await self._started(a, log):
            return None
        a.started = True
        if unresolved is not None:
            log.warning("reading the lease's values stored by reference failed: %s", unresolved)
            await self._publish_fail(
                a, E.CLASS_RETRYABLE, f"reading the step's values stored by reference: {unresolved}"
            )
            return None
        if self.codec is not None:
            try:
                input_ = open_value(self.codec, input_)
            except CodecError as cerr:
                msg = f"cairn: decrypting the step's input: {cerr}"
                log.warning("failing the step: %s", msg)
                self._m_steps.add(1, {"outcome": "failed"})
                await self._publish_fail(a, CLASS_CODEC, msg)
                return None

        # The body's span: a child of the engine's step span (the lease's traceparent).
        parent = TraceContextTextMapPropagator().extract({"traceparent": l.traceparent}) if self._tracing else None
        span = self.tracer.start_span(
            f"step {l.workflow}/{l.step}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes={
                "cairn.run": l.run,
                "cairn.workflow": l.workflow,
                "cairn.version": l.version,
                "cairn.step": l.step,
                "cairn.attempt": l.attempt,
                "cairn.worker": self.id,
            },
        )
        timeout_at = None if isinstance(l.timeout_at, Unset) else l.timeout_at
        info = StepInfo(
            run=l.run,
            workflow=l.workflow,
            version=l.version,
            step=l.step,
            attempt=l.attempt,
            delivery=l.delivery.value,
            idempotency_key=l.idempotency_key,
            correlation="" if isinstance(l.correlation, Unset) else l.correlation,
            worker=self.id,
            lease=l.id,
            traceparent=l.traceparent,
            timeout_at=timeout_at,
            item=-1 if isinstance(l.item, Unset) else l.item,
        )
        sc = StepContext(info, input_, outputs, state, log, span, self.tracer)
        sc._lease = l
        sc._checkpoint = functools.partial(self._checkpoint, a, log)
        sc._payload = functools.partial(self._payload, a)
        sc._codec = self.codec
        sc.resumed = l.resumed is True
        sc.resume = None if isinstance(l.resume, Unset) else l.resume
        sc.interrupted = None if isinstance(l.interrupt, Unset) else l.interrupt
        sc._progress = Sender(self.c.server, self.api, self.ac.api, l.id)
        sc._loop = asyncio.get_running_loop()
        a.ctx = sc
        if a.cause is not None:  # cancelled before the body began
            sc._cancel(a.cause)
        sid = span.get_span_context().span_id
        USAGE_PROCESSOR.track(sid, sc._acc)
        timer = None
        if timeout_at is not None:
            delay = (timeout_at - _dt.datetime.now(_dt.UTC)).total_seconds()
            timer = asyncio.get_running_loop().call_later(max(0.0, delay), a.cancel, E.AttemptTimeout())
        t0 = time.monotonic()
        out: Any = None
        err: BaseException | None = None
        try:
            out = await self._run_body(a, sc, h, span)
        except BaseException as e:  # a body's error of any kind is reported
            err = e
        finally:
            if timer is not None:
                timer.cancel()
        elapsed = time.monotonic() - t0
        try:
            return await self._report(a, sc, span, out, err, elapsed)
        finally:
            span.end()
            USAGE_PROCESSOR.untrack(sid)

    async def _run_body(self, a: _Attempt, sc: StepContext, h: Handler, span: trace.Span) -> Any:
        # The body runs with its span current: spans it opens nest under it.
        ctx = contextvars.copy_context()
        ctx.run(otel_context.attach, trace.set_span_in_context(span))
        if inspect.iscoroutinefunction(h):
            a.task = asyncio.get_running_loop().create_task(h(sc, sc.input), context=ctx)
            if sc.cancelled:
                a.task.cancel()
            try:
                return await a.task
            except asyncio.CancelledError:
                cur = asyncio.current_task()
                if cur is not None and cur.cancelling():
                    raise  # the worker itself is cancelled
                raise sc.cause or E.Shutdown() from None
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._pool, ctx.run, h, sc, sc.input)
        if inspect.isawaitable(result):  # a plain function that returned a coroutine
            return await result
        return result

    async def _report(
        self, a: _Attempt, sc: StepContext, span: trace.Span, out: Any, err: BaseException | None, elapsed: float
    ) -> _Attempt | None:
        """Publishes how the body ended, by the cause that ended it."""
        log = sc.log
        cause = a.cause
        patch, usage = sc._ended()
        if isinstance(err, Suspended):
            # The checkpoint that suspended the function ended the attempt:
            # publish nothing more.
            a.finish()
            log.debug("function suspended (%.3fs)", elapsed)
            self._record("suspended", elapsed)
            return None
        if isinstance(cause, E.LeaseLost | E.RunEnded):
            # The engine said so already: publish nothing more.
            a.finish()
            span.set_status(Status(StatusCode.ERROR, str(cause)))
            log.info("body cancelled; nothing is reported (%s, %.3fs)", cause, elapsed)
            self._record("dropped", elapsed)
            return None
        if isinstance(cause, E.Shutdown) and err is not None:
            # Cut off by the drain and the body did not finish: interrupted. (A
            # body that returns its output when cancelled is completed.)
            msg = f"{self._interrupted()}: {E.message_of(err)}"
            span.set_status(Status(StatusCode.ERROR, msg))
            span.set_attribute("cairn.error.class", E.CLASS_INTERRUPTED)
            log.info("step interrupted by the shutdown (%.3fs)", elapsed)
            self._record("interrupted", elapsed)
            await self._publish_fail(a, E.CLASS_INTERRUPTED, msg, patch, usage)
            return None
        if err is None:
            try:
                json.dumps(out)
            except (TypeError, ValueError) as e:
                err = E.FatalError(f"encoding the output of step {a.lease.step}: {e}")
            else:
                span.set_status(Status(StatusCode.OK))
                log.debug("step completed (%.3fs)", elapsed)
                self._record("completed", elapsed)
                return self._eager(await self._publish_complete(a, out, patch, usage, log))
        if isinstance(err, E.Interrupt) and cause is None:
            span.set_status(Status(StatusCode.OK))
            log.info("step interrupted by its body (%.3fs)", elapsed)
            self._record("interrupt", elapsed)
            await self._publish_interrupt(a, err.payload, patch, usage, log)
            return None
        if isinstance(err, Exception | asyncio.CancelledError):
            cls, msg = E.class_of(err), E.message_of(err)
            if not isinstance(err, E.StepError | E.Cancelled):
                # Anything else is fatal; its traceback goes to the log only.
                log.info("step body raised %s", type(err).__name__, exc_info=err)
        else:
            raise err  # KeyboardInterrupt, SystemExit
        if isinstance(cause, E.AttemptTimeout) and isinstance(err, E.AttemptTimeout | asyncio.CancelledError):
            cls, msg = E.CLASS_TIMEOUT, f"attempt exceeded its timeout: {msg}"
        span.set_status(Status(StatusCode.ERROR, msg))
        span.set_attribute("cairn.error.class", cls)
        log.info("step failed: class %s: %s (%.3fs)", cls, msg, elapsed)
        self._record("failed", elapsed)
        await self._publish_fail(a, cls, msg, patch, usage)
        return None

    def _record(self, outcome: str, elapsed: float) -> None:
        self._m_steps.add(1, {"outcome": outcome})
        self._m_duration.record(elapsed, {"outcome": outcome})

    def _interrupted(self) -> str:
        return f"worker {self.id} shut down before the step finished (drain timeout {self.drain_timeout}s)"

    async def _resolve(self, a: _Attempt) -> tuple[Any, dict[str, Any], dict[str, Any], BaseException | None]:
        """The lease's input, outputs and state, values stored by reference read
        through the lease (a few tries)."""
        l = a.lease  # noqa: E741
        outputs = dict(l.steps.additional_properties)
        state = dict(l.state.additional_properties)
        values: list[tuple[Any, Any]] = [("input", l.input_)]
        values += [(("o", k), v) for k, v in outputs.items()]
        values += [(("s", k), v) for k, v in state.items()]
        refs = [(slot, ref) for slot, v in values if (ref := as_payload_ref(v)) is not None]
        input_ = l.input_
        if not refs:
            return input_, outputs, state, None
        last: BaseException | None = None
        b = _Backoff(0.1, 1.0)
        for _ in range(4):
            try:
                for slot, (sha, _n) in refs:
                    # The answer is the JSON value itself, which the generated call decodes.
                    v = await self._call(get_lease_payload, lease=l.id, sha256=sha)
                    if slot == "input":
                        input_ = v
                    elif slot[0] == "o":
                        outputs[slot[1]] = v
                    else:
                        state[slot[1]] = v
                return input_, outputs, state, None
            except (E.CairnError, ValueError) as err:
                last = err
                await asyncio.sleep(b.next())
        return input_, outputs, state, last

    async def _payload(self, a: _Attempt, ref: Any) -> Any:
        """The value the reference ref stands for, read through a's lease (a few tries)."""
        r = as_payload_ref(ref)
        if r is None:
            return ref
        last: BaseException | None = None
        b = _Backoff(0.1, 1.0)
        for _ in range(4):
            try:
                return await self._call(get_lease_payload, lease=a.lease.id, sha256=r[0])
            except (E.CairnError, ValueError) as err:
                last = err
                await asyncio.sleep(b.next())
        assert last is not None
        raise last

    async def _started(self, a: _Attempt, log: logging.LoggerAdapter[logging.Logger]) -> bool:
        """Tells the engine the body is about to run. An at_least_once lease is
        started by its claim (the protocol's started is optional for it and
        writes nothing): no call, one round trip less per step. An at_most_once
        lease must be started: the engine records it and never offers the
        step again."""
        if a.lease.delivery.value != "at_most_once":
            return True
        b = _Backoff(0.1, 2.0)
        give_up = time.monotonic() + self.lease_ttl
        while True:
            if a.cause is not None:
                a.finish()
                log.info("lease cancelled before its body started: %s", a.cause)
                return False
            try:
                await self._call(step_started, lease=a.lease.id)
                return True
            except E.CairnError as err:
                if _reason(err) == E.REASON_ALREADY_APPLIED:
                    return True
                if E.temporary(err) and time.monotonic() < give_up:
                    log.warning("sending started failed; retrying: %s", err)
                    await asyncio.sleep(b.next())
                    continue
                a.finish()
                self._refused(a, "started", err, log)
                return False

    async def _publish_complete(
        self, a: _Attempt, out: Any, patch: dict[str, Any], usage: Usage, log: logging.LoggerAdapter[logging.Logger]
    ) -> list[Lease]:
        """Reports a body's output. While the worker still claims, the complete asks
        for the slot's next lease (claim_next, eager dispatch) and returns it."""
        if not a.finish():
            return []
        cont = a.ctx._continue_as if a.ctx is not None else None
        if self.codec is not None:
            try:
                clear = self._clear_of(a.lease.workflow, a.lease.version)
                if cont is not None:  # sealed like a run input
                    cont = (seal_top(self.codec, cont[0], clear),)
                else:
                    out = self.codec.encrypt(out)
                patch = seal_map(self.codec, patch, clear)
            except CodecError as err:
                await self._send_fail(a, E.CLASS_FATAL, f"encrypting the step's outcome: {err}", {}, usage, log)
                return []
        wu = usage.wire()
        body = CompleteRequest(
            output=out if cont is None else UNSET,
            state_patch=CompleteRequestStatePatch.from_dict(patch) if patch else UNSET,
            attributes=CompleteRequestAttributes.from_dict(a.ctx._attrs) if a.ctx is not None and a.ctx._attrs else UNSET,
            usage=WireUsage.from_dict(wu) if wu else UNSET,
            summary=a.ctx._summary if a.ctx is not None else UNSET,
            # A function's run that continues as new asks for no next lease.
            claim_next=ClaimNext(max_=1) if self._claiming and cont is None else UNSET,
            continue_as_new=WireContinueAsNew(input_=cont[0]) if cont is not None else UNSET,
        )
        try:
            ended = await self._retry(a, lambda: self._call(complete_step, lease=a.lease.id, body=body))
        except E.CairnError as err:
            if _reason(err) == E.REASON_TOO_LARGE and isinstance(err, E.APIError):
                # The output (or the state patch) would grow the run record past its
                # limit; nothing was applied and the lease is still held: fail the
                # step with a class that says why.
                detail = err.detail or str(err)
                log.error("the engine refused the step's output as too large; failing the step: %s", detail)
                await self._send_fail(
                    a, E.CLASS_OUTPUT_TOO_LARGE, f"the engine refused the step's output as too large: {detail}",
                    patch, usage, log,
                )  # fmt: skip
                return []
            if isinstance(err, E.APIError) and err.status == 422:
                log.error("the engine refused the step's output; failing the attempt: %s", err)
                await self._send_fail(a, E.CLASS_FATAL, f"the engine refused the step's output: {err}", {}, usage, log)
                return []
            self._refused(a, "complete", err, log)
            return []
        if ended is None or isinstance(ended.leases, Unset):
            return []
        return list(ended.leases)

    async def _publish_interrupt(
        self, a: _Attempt, payload: Any, patch: dict[str, Any], usage: Usage, log: logging.LoggerAdapter[logging.Logger]
    ) -> None:
        """Reports a body's interrupt: the step waits for a resume. A payload the
        engine refuses (422) fails the attempt as fatal instead."""
        if not a.finish():
            return
        try:
            json.dumps(payload)
            if self.codec is not None:
                patch = seal_map(self.codec, patch, self._clear_of(a.lease.workflow, a.lease.version))
        except (TypeError, ValueError, CodecError) as err:
            await self._send_fail(a, E.CLASS_FATAL, f"the step's interrupt: {err}", {}, usage, log)
            return
        wu = usage.wire()
        body = InterruptRequest(
            payload=payload,
            state_patch=InterruptRequestStatePatch.from_dict(patch) if patch else UNSET,
            usage=WireUsage.from_dict(wu) if wu else UNSET,
            summary=a.ctx._summary if a.ctx is not None else UNSET,
        )
        try:
            await self._retry(a, lambda: self._call(interrupt_step, lease=a.lease.id, body=body))
        except E.CairnError as err:
            if isinstance(err, E.APIError) and err.status == 422:
                log.error("the engine refused the interrupt; failing the attempt: %s", err)
                await self._send_fail(a, E.CLASS_FATAL, f"the engine refused the interrupt: {err}", {}, usage, log)
                return
            self._refused(a, "interrupt", err, log)

    async def _checkpoint(self, a: _Attempt, log: logging.LoggerAdapter[logging.Logger], req: dict[str, Any]) -> None:
        """Records a function's operations under a's lease (with a suspension,
        ending the attempt), retrying what changed nothing. A refusal is
        answered by its reason (the body is cancelled); an operation the engine
        refuses (the history's limits) fails the body."""
        if req.get("suspend") is not None and a.ctx is not None:
            wu = a.ctx._ended()[1].wire()  # the attempt ends: what it consumed goes with it
            if wu:
                req = {**req, "usage": wu}
        body = CheckpointRequest.from_dict(self._seal_checkpoint(req))
        try:
            await self._retry(a, lambda: self._call(checkpoint_step, lease=a.lease.id, body=body))
        except E.CairnError as err:
            if isinstance(a.cause, E.LeaseLost | E.RunEnded):
                raise a.cause from None
            if isinstance(err, E.APIError) and err.status == 422:
                raise E.fatal(f"the engine refused the function's checkpoint: {err}") from None
            self._refused(a, "checkpoint", err, log)
            raise

    def _seal_checkpoint(self, req: dict[str, Any]) -> dict[str, Any]:
        """Encrypts the results of a function's operations before they are
        checkpointed, and an invoked run's input (its top-level values, but the
        clear keys of the child workflow when this worker serves it)."""
        k = self.codec
        if k is None:
            return req
        try:
            ops = []
            for op in req.get("operations", []):
                if "result" in op:
                    op = {**op, "result": k.encrypt(op["result"])}
                ops.append(op)
            out = {**req, "operations": ops}
            sp = req.get("suspend")
            if isinstance(sp, dict) and isinstance(sp.get("invoke"), dict) and sp["invoke"].get("input") is not None:
                inv = sp["invoke"]
                clear = self._clear_of(inv["workflow"], inv.get("version"))
                out["suspend"] = {**sp, "invoke": {**inv, "input": seal_top(k, inv["input"], clear)}}
        except CodecError as err:
            raise E.fatal(f"encrypting the function's checkpoint: {err}") from err
        return out

    def _eager(self, leases: list[Lease]) -> _Attempt | None:
        """Tracks the first lease a complete handed back, to run on the same slot;
        fails any more as unservable (a server bug: claim_next asks for one)."""
        nxt = None
        for i, lease in enumerate(leases):
            a = self._track(lease)
            if i == 0:
                nxt = a
                continue
            self.log.error("the server returned more leases than claim_next asked for (%d)", len(leases))
            self._spawn(self._give_back(a))
        return nxt

    async def _publish_fail(
        self, a: _Attempt, cls: str, msg: str, patch: dict[str, Any] | None = None, usage: Usage | None = None
    ) -> None:
        if not a.finish():
            return
        await self._send_fail(a, cls, msg, patch or {}, usage or Usage(), self._lease_log(a.lease))

    async def _send_fail(
        self,
        a: _Attempt,
        cls: str,
        msg: str,
        patch: dict[str, Any],
        usage: Usage,
        log: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        wu = usage.wire()
        if self.codec is not None and patch:
            try:
                patch = seal_map(self.codec, patch, self._clear_of(a.lease.workflow, a.lease.version))
            except CodecError as err:
                patch, msg = {}, f"{msg} (state patch dropped: {err})"

        def body(p: dict[str, Any], m: str) -> FailRequest:
            return FailRequest(
                error=ErrorInfo(class_=cls, message=m),
                state_patch=FailRequestStatePatch.from_dict(p) if p else UNSET,
                usage=WireUsage.from_dict(wu) if wu else UNSET,
                summary=a.ctx._summary if a.ctx is not None else UNSET,
            )

        req = body(patch, msg)
        try:
            await self._retry(a, lambda: self._call(fail_step, lease=a.lease.id, body=req))
        except E.CairnError as err:
            if _reason(err) == E.REASON_TOO_LARGE and patch and isinstance(err, E.APIError):
                # The failure matters more than the patch: once more without it.
                detail = err.detail or str(err)
                log.warning("fail refused as too large; sending it again without the state patch: %s", detail)
                req = body({}, f"{msg} (state patch dropped: {detail})")
                try:
                    await self._retry(a, lambda: self._call(fail_step, lease=a.lease.id, body=req))
                except E.CairnError as err2:
                    self._refused(a, "fail", err2, log)
                return
            self._refused(a, "fail", err, log)

    async def _retry(self, a: _Attempt, fn: Any) -> Any:
        """Calls fn until it gets an answer that is not temporary, backing off, for up
        to a few lease TTLs (heartbeats keep the lease alive meanwhile). Calls
        outlive the claim loop: a step that finished during the drain is still
        reported."""
        b = _Backoff(0.1, 5.0)
        give_up = time.monotonic() + max(60.0, 3 * self.lease_ttl)
        while True:
            try:
                return await fn()  # bounded by the client's timeouts
            except (E.CairnError, TimeoutError) as err:
                e = err if isinstance(err, E.CairnError) else E.TransportError(self.c.server, err)
                if not E.temporary(e) or time.monotonic() > give_up or not self._publishing:
                    raise e from None
                if isinstance(a.cause, E.LeaseLost | E.RunEnded):
                    raise e from None  # a heartbeat learned the outcome meanwhile
                self.log.warning("reporting a step failed; retrying (run %s step %s attempt %d): %s", a.lease.run, a.lease.step, a.lease.attempt, e)
                await asyncio.sleep(b.next())

    def _refused(self, a: _Attempt, call: str, err: BaseException, log: logging.LoggerAdapter[logging.Logger]) -> None:
        """Answers a refused worker call by its reason, as the protocol says."""
        reason = _reason(err)
        if reason == E.REASON_ALREADY_APPLIED:
            log.debug("%s: already applied (an earlier answer was lost); treated as success", call)
        elif reason == E.REASON_FENCED:
            a.cancel(E.LeaseLost())
            log.warning("%s refused: the lease was fenced; the work is dropped: %s", call, err)
        elif reason == E.REASON_RUN_TERMINAL:
            self._run_ended(a.lease.run)
            log.info("%s refused: the run has ended; its bodies are stopped", call)
        elif reason == E.REASON_NOT_STARTED:
            log.error(
                "WORKER BUG: %s of an at_most_once attempt was refused as not_started: the engine never recorded "
                "its started call: %s",
                call,
                err,
            )
        elif reason == E.REASON_TOO_LARGE:
            log.error("%s refused: the run record is too large even for it; the lease is left to expire", call)
        elif E.is_not_found(err):
            log.warning("%s: the server does not know this lease; the work is dropped: %s", call, err)
        else:
            log.error("%s failed; the lease is left to expire and the engine will recover the attempt: %s", call, err)

    # ---- heartbeats ----

    async def _heartbeat_loop(self) -> None:
        """Extends every held lease once per heartbeat period, in one batched call
        per 100 leases, and cancels the bodies whose leases were refused. Runs
        until the drain is over: bodies still running need their leases."""
        while True:
            await asyncio.sleep(self.hb_every)
            ids = list(self._inflight)
            for i in range(0, len(ids), 100):
                await self._heartbeat(ids[i : i + 100])

    async def _heartbeat(self, ids: list[str]) -> None:
        try:
            r = await asyncio.wait_for(
                self._call(heartbeat_steps, body=HeartbeatManyRequest(leases=ids)), max(self.hb_every, 5.0)
            )
        except (E.CairnError, TimeoutError) as err:
            self.log.warning("heartbeat failed; leases expire unless a later one lands (%d): %s", len(ids), err)
            return
        for res in r.results:
            a = self._inflight.get(res.lease)
            if a is None:
                continue
            reason = "" if isinstance(res.reason, Unset) else res.reason.value
            if reason == "":
                if not isinstance(res.error, Unset) and res.error:
                    self.log.debug(
                        "heartbeat failed (run %s step %s attempt %d): %s", a.lease.run, a.lease.step, a.lease.attempt, res.error
                    )
            elif reason == E.REASON_FENCED:
                self.log.warning(
                    "heartbeat fenced: the lease was reclaimed; cancelling the body (run %s step %s attempt %d)",
                    a.lease.run,
                    a.lease.step,
                    a.lease.attempt,
                )
                a.cancel(E.LeaseLost())
            elif reason == E.REASON_RUN_TERMINAL:
                self.log.info("heartbeat: run %s has ended; cancelling its bodies", a.lease.run)
                self._run_ended(a.lease.run)
            elif reason != E.REASON_ALREADY_APPLIED:
                self.log.error(
                    "heartbeat refused (run %s step %s attempt %d): %s", a.lease.run, a.lease.step, a.lease.attempt, reason
                )

    # ---- drain ----

    async def _drain(self, bodies: set[asyncio.Task[None]]) -> None:
        """Waits for running bodies up to the drain timeout, then cuts off the
        rest: cancels them (Shutdown) and gives them a moment to return. One
        that does not is reported here as interrupted, with the state patch and
        usage it recorded so far. An at_most_once attempt whose started was
        never acknowledged cannot be reported (not_started): its lease is left
        to expire."""
        if not bodies:
            return
        self.log.info("draining: waiting for %d running steps (timeout %ss)", len(self._inflight), self.drain_timeout)
        _, pending = await asyncio.wait(set(bodies), timeout=self.drain_timeout)
        if not pending:
            return
        for a in list(self._inflight.values()):
            a.cancel(E.Shutdown())
        _, pending = await asyncio.wait(pending, timeout=CUT_OFF_WAIT)
        if not pending:
            self.log.warning("drain timeout passed; the steps still running were cancelled, and have ended")
            return
        reported = dropped = 0
        waits: list[asyncio.Future[Any]] = []
        for a in list(self._inflight.values()):
            log = self._lease_log(a.lease)
            if a.finish():
                # The body is still running, deaf to its cancellation.
                if a.lease.delivery.value == "at_most_once" and not a.started:
                    dropped += 1
                    log.warning("drain: an at_most_once attempt whose started was not acknowledged cannot be reported")
                    self._untrack(a)
                    continue
                reported += 1
                patch, usage = a.ctx._ended() if a.ctx is not None else ({}, Usage())
                msg = f"{self._interrupted()}; its body did not return when cancelled"
                waits.append(asyncio.ensure_future(self._send_fail(a, E.CLASS_INTERRUPTED, msg, patch, usage, log)))
            else:
                waits.append(asyncio.ensure_future(a.settled.wait()))
        if waits:
            await asyncio.wait(waits, timeout=10)
        self._publishing = False
        self.log.warning(
            "drain timeout passed; reported the steps still running as interrupted (%d reported, %d dropped)",
            reported,
            dropped,
        )


def format_exception(err: BaseException) -> str:
    return "".join(traceback.format_exception(err))

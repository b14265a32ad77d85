"""The client: start, read, wait for, list, signal, pause, cancel and rerun runs,
schedules and batches, over the client generated from the committed OpenAPI
document (cairn._api).

Every operation is written once, as a generator of calls (_ops below), and
driven by :class:`Client` (blocking, httpx.Client) or :class:`AsyncClient`
(asyncio, httpx.AsyncClient): both answer the same way.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack

import httpx

from . import __version__
from ._api.api.batches import create_batch, get_batch
from ._api.api.operations import advance_clock, get_clock
from ._api.api.runs import (
    cancel_run,
    delete_run,
    get_run,
    get_run_journal,
    get_run_payload,
    get_run_status,
    get_update,
    list_runs,
    pause_run,
    publish_event,
    rerun_run,
    resume_run,
    resume_step,
    send_event,
    send_update,
    start_run,
)
from ._api.api.schedules import (
    backfill_schedule,
    create_schedule,
    delete_schedule,
    get_schedule,
    list_schedules,
    pause_schedule,
    resume_schedule,
)
from ._api.api.workers import list_workers, stop_worker
from ._api.api.workflows import get_workflow, invalidate_cache, list_workflows
from ._api.client import AuthenticatedClient
from ._api.models import (
    AdvanceClockRequest,
    BackfillRequest,
    BackfillResult,
    Batch,
    BatchFilter,
    BatchFilterStatusItem,
    BatchRequest,
    BatchRequestAction,
    Budget,
    CancelRequest,
    ClockResponse,
    EventRequest,
    EventResult,
    JournalEntry,
    ListRunsStatus,
    PublishRequest,
    PublishResult,
    RerunRequest,
    ResumeStepRequest,
    Run,
    RunPage,
    RunProgress,
    RunSummary,
    Schedule,
    SchedulePage,
    ScheduleRequest,
    ScheduleRequestOverlap,
    StartRequest,
    StartRequestAttributes,
    StartRequestState,
    Update,
    UpdateRequest,
    WorkerInfo,
    WorkflowSummary,
)
from ._api.types import UNSET, Response, Unset
from ._http import AsyncRetryTransport, RetryTransport
from .codec import CodecError, Keyring, open_value, seal_map, seal_top, seal_value
from .errors import APIError, TransportError, temporary
from .function import seconds
from .payloads import as_payload_ref
from .stream import StreamEvent, afollow, follow
from .workflow import Duration

DEFAULT_SERVER = "http://127.0.0.1:8080"
_List = list
if TYPE_CHECKING:
    from .store import AsyncStore, Store

T = TypeVar("T")

# How long one request may take: a held claim or wait answers within 24 s.
_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


def _opt(v: T | None) -> T | Unset:
    return UNSET if v is None else v


# ---- the operations, once for both clients ----


@dataclass
class _Call:
    """One generated operation to call: module.sync_detailed or asyncio_detailed with kwargs."""

    op: ModuleType
    kwargs: dict[str, Any]


@dataclass
class _Sleep:
    seconds: float


_Op = Generator[_Call | _Sleep, Any, T]


def _call(op: ModuleType, **kwargs: Any) -> _Call:
    return _Call(op, kwargs)


def _check(server: str, resp: Response[Any]) -> Any:
    """The parsed answer of a 2xx; an APIError for anything else."""
    if 200 <= resp.status_code < 300:
        return resp.parsed
    raise APIError.from_body(int(resp.status_code), resp.content)


def _resolve_values(slots: list[tuple[Any, Callable[[Any], None]]], fetch: Callable[[str], _Call]) -> _Op[None]:
    """Replaces each value that is a payload reference by its value."""
    for value, put in slots:
        ref = as_payload_ref(value)
        if ref is None:
            continue
        # The answer is the JSON value itself, which the generated call decodes.
        value = yield fetch(ref[0])
        put(value)


def _resolve_run(r: Run) -> _Op[Run]:
    """Replaces the references in a run (input, output, state, step outputs) by their values."""
    run = r.id

    def fetch(sha: str) -> _Call:
        return _call(get_run_payload, run=run, sha256=sha)

    def attr(obj: Any, name: str) -> tuple[Any, Callable[[Any], None]]:
        def put(v: Any) -> None:
            setattr(obj, name, v)

        return getattr(obj, name), put

    def item(m: dict[str, Any], k: str) -> tuple[Any, Callable[[Any], None]]:
        def put(v: Any) -> None:
            m[k] = v

        return m[k], put

    slots = [attr(r, "input_")]
    st = r.state.additional_properties
    slots += [item(st, k) for k in st]
    slots += [attr(s, "output") for s in r.steps]
    if as_payload_ref(r.output) is not None:
        slots.append(attr(r, "output"))
    elif isinstance(r.output, dict) and r.steps:
        sinks: dict[str, Any] = r.output
        ids = {s.id for s in r.steps}
        if all(k in ids for k in sinks):
            slots += [item(sinks, k) for k in sinks]
    yield from _resolve_values(slots, fetch)
    return r


def _decrypting(what: str, err: CodecError) -> CodecError:
    e = CodecError(err.kind, f"decrypting {what}: {err}", err.kid)
    e.__cause__ = err
    return e


def _open(k: Keyring | None, v: Any, what: str) -> Any:
    if k is None or isinstance(v, Unset):
        return v
    try:
        return open_value(k, v)
    except CodecError as err:
        raise _decrypting(what, err) from err


def _open_run(k: Keyring | None, r: Run) -> Run:
    """Decodes a run view in place: input, state, output, step outputs and function histories."""
    if k is None:
        return r
    r.input_ = _open(k, r.input_, "the run input")
    r.output = _open(k, r.output, "the run output")
    st = r.state.additional_properties
    for key in list(st):
        st[key] = _open(k, st[key], f"the run state {key}")
    for s in r.steps:
        s.output = _open(k, s.output, f"the output of step {s.id}")
        if not isinstance(s.operations, Unset):
            for op in s.operations:
                op.result = _open(k, op.result, f"the result of operation {op.id}")
    return r


class _Clear:
    """The clear keys of the workflow versions a client started runs of (an
    encrypted workflow's keys left in the clear, from its definition)."""

    def __init__(self) -> None:
        self.m: dict[str, list[str]] = {}


def _op_clear_keys(cache: _Clear, workflow: str, version: str | None) -> _Op[list[str]]:
    """The keys workflow@version leaves in the clear (its definition read once per
    version; no version: the latest, read each time). An unknown workflow has none
    (the start says so)."""
    if version and f"{workflow}@{version}" in cache.m:
        return cache.m[f"{workflow}@{version}"]
    if not version:
        ws = yield _call(list_workflows)
        version = next((w.latest for w in ws.workflows if w.name == workflow), None)
        if not version:
            return []
    try:
        d = yield _call(get_workflow, name=workflow, version=version)
    except APIError as err:
        if err.status == 404:
            return []
        raise
    clear = [] if isinstance(d.clear, Unset) else list(d.clear)
    cache.m[f"{workflow}@{d.version}"] = clear
    return clear


class _StartOptions(TypedDict, total=False):
    """The options of start (Client.start, AsyncClient.start), each optional."""

    version: str | None
    correlation: str | None
    idempotency_key: str | None
    deadline: _dt.datetime | float | None
    state: dict[str, Any] | None
    priority: int | None
    budget: dict[str, Any] | None
    attributes: dict[str, Any] | None


class _RunFilter(TypedDict, total=False):
    """The filters of list and runs (Client.list, AsyncClient.list), each optional."""

    workflow: str | None
    status: str | None
    correlation: str | None
    id_prefix: str | None
    started_after: _dt.datetime | None
    started_before: _dt.datetime | None
    limit: int | None
    cursor: str | None
    attr: list[str] | None


def _op_start(
    workflow: str,
    input: Any,
    k: Keyring | None = None,
    cache: _Clear | None = None,
    *,
    version: str | None = None,
    correlation: str | None = None,
    idempotency_key: str | None = None,
    deadline: _dt.datetime | float | None = None,
    state: dict[str, Any] | None = None,
    priority: int | None = None,
    budget: dict[str, Any] | None = None,
    attributes: dict[str, Any] | None = None,
) -> _Op[StartedRun]:
    if k is not None and (input is not None or state):
        clear = yield from _op_clear_keys(cache or _Clear(), workflow, version)
        try:
            input = seal_top(k, input, clear)
            if state:
                state = seal_map(k, state, clear)
        except CodecError as err:
            raise CodecError(err.kind, f"encrypting the run input or state: {err}", err.kid) from err
    dl: _dt.datetime | Unset = UNSET
    if isinstance(deadline, _dt.datetime):
        dl = deadline.astimezone(_dt.UTC)
    elif deadline is not None:
        dl = _dt.datetime.now(_dt.UTC) + _dt.timedelta(seconds=float(deadline))
    body = StartRequest(
        workflow=workflow,
        input_=UNSET if input is None else input,
        version=_opt(version),
        correlation=_opt(correlation),
        idempotency_key=_opt(idempotency_key),
        deadline=dl,
        state=UNSET if state is None else StartRequestState.from_dict(state),
        priority=_opt(priority),
        budget=UNSET if budget is None else Budget.from_dict(budget),
        attributes=UNSET if not attributes else StartRequestAttributes.from_dict(attribute_values(attributes)),
    )
    res = yield _call(start_run, body=body)
    run = yield from _resolve_run(res.run)
    return StartedRun(run=_open_run(k, run), existed=res.existed, skipped=res.skipped is True)


def _op_get(run: str, k: Keyring | None = None) -> _Op[Run]:
    r = yield _call(get_run, run=run)
    return _open_run(k, (yield from _resolve_run(r)))


def _op_wait(run: str, on_progress: Callable[[RunProgress], None] | None, k: Keyring | None = None) -> _Op[Run]:
    after = -1
    backoff = 0.1
    while True:
        try:
            kw: dict[str, Any] = {"run": run}
            if after >= 0:
                kw.update(after=after, wait_ms=20_000)
            p: RunProgress = yield _call(get_run_status, **kw)
            backoff = 0.1
            if p.status.value not in ("running", "paused"):
                r = yield from _op_get(run, k)
                if isinstance(r.continued_as, Unset) or not r.continued_as:
                    return r
                # A function's run that continued as new: follow the chain to its last run.
                run, after = r.continued_as, -1
                continue
            if p.rev != after:
                after = p.rev
                if on_progress is not None:
                    on_progress(p)
            continue
        except (APIError, TransportError) as err:
            if not temporary(err):
                raise
        yield _Sleep(backoff / 2 + random.uniform(0, backoff / 2))
        backoff = min(backoff * 2, 2.0)


def _op_list(
    *,
    workflow: str | None = None,
    status: str | None = None,
    correlation: str | None = None,
    id_prefix: str | None = None,
    started_after: _dt.datetime | None = None,
    started_before: _dt.datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    attr: list[str] | None = None,
) -> _Op[RunPage]:
    page: RunPage = yield _call(
        list_runs,
        workflow=_opt(workflow),
        status=UNSET if status is None else ListRunsStatus(status),
        correlation=_opt(correlation),
        id_prefix=_opt(id_prefix),
        started_after=_opt(started_after),
        started_before=_opt(started_before),
        limit=_opt(limit),
        cursor=_opt(cursor),
        attr=UNSET if not attr else list(attr),
    )
    return page


def _advance_body(seconds_: Duration) -> AdvanceClockRequest:
    return AdvanceClockRequest(advance_ms=round(seconds(seconds_) * 1000))


def attribute_values(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Search attributes as JSON values: a datetime becomes its RFC 3339 text."""
    return {k: v.isoformat() if isinstance(v, _dt.datetime) else v for k, v in attrs.items()}


def _op_simple(op: ModuleType, **kwargs: Any) -> _Op[Any]:
    v = yield _call(op, **kwargs)
    return v


def _op_view(op: ModuleType, k: Keyring | None, **kwargs: Any) -> _Op[Run]:
    r = yield _call(op, **kwargs)
    return _open_run(k, (yield from _resolve_run(r)))


def _op_started(op: ModuleType, k: Keyring | None, **kwargs: Any) -> _Op[StartedRun]:
    res = yield _call(op, **kwargs)
    run = yield from _resolve_run(res.run)
    return StartedRun(run=_open_run(k, run), existed=res.existed, skipped=res.skipped is True)


#: invalidate_cache's key when every key's entry is meant (None is the key null).
_EVERY_KEY: Any = object()


def _op_invalidate_cache(workflow: str, step: str, key: Any) -> _Op[int]:
    kw: dict[str, Any] = {} if key is _EVERY_KEY else {"key": json.dumps(key, separators=(",", ":"))}
    r = yield _call(invalidate_cache, workflow=workflow, step=step, **kw)
    return int(r.deleted)


def _op_journal(run: str, k: Keyring | None) -> _Op[list[JournalEntry]]:
    j = yield _call(get_run_journal, run=run)
    entries: list[JournalEntry] = list(j.entries)
    for e in entries:
        e.data = _open(k, e.data, "a journal entry")
    return entries


def _op_create_schedule(body: ScheduleRequest, k: Keyring | None, cache: _Clear) -> _Op[Schedule]:
    if k is not None and not isinstance(body.input_, Unset) and body.input_ is not None:
        v = body.version if isinstance(body.version, str) else None
        clear = yield from _op_clear_keys(cache, body.workflow, v)
        try:
            body.input_ = seal_top(k, body.input_, clear)
        except CodecError as err:
            raise CodecError(err.kind, f"encrypting the schedule input: {err}", err.kid) from err
    s: Schedule = yield _call(create_schedule, body=body)
    return s


@dataclass
class StartedRun:
    """A run started (or, with an idempotency key used before, found: existed is True; or, with
    the workflow's singleton key held by a running run, that run: existed and skipped are True)."""

    run: Run
    existed: bool
    skipped: bool = False


def _event_body(name: str, payload: Any, id: str | None, k: Keyring | None = None) -> EventRequest:
    try:
        payload = seal_value(k, payload)
    except CodecError as err:
        raise CodecError(err.kind, f"encrypting the event payload: {err}", err.kid) from err
    return EventRequest(name=name, payload=UNSET if payload is None else payload, id=_opt(id))


def _update_body(name: str, input: Any, id: str | None, wait_ms: int | None, k: Keyring | None) -> UpdateRequest:
    try:
        input = seal_value(k, input)
    except CodecError as err:
        raise CodecError(err.kind, f"encrypting the update's input: {err}", err.kid) from err
    return UpdateRequest(name=name, input_=UNSET if input is None else input, id=_opt(id), wait_ms=_opt(wait_ms))


def _op_update(op: ModuleType, k: Keyring | None, **kwargs: Any) -> _Op[Update]:
    """An update, its answer read when stored by reference, and decoded."""
    u = yield _call(op, **kwargs)
    run = u.run

    def put(v: Any) -> None:
        u.answer = v

    yield from _resolve_values([(u.answer, put)], lambda sha: _call(get_run_payload, run=run, sha256=sha))
    u.answer = _open(k, u.answer, "an update's answer")
    return u  # type: ignore[no-any-return]


def _publish_body(name: str, payload: Any, id: str | None) -> PublishRequest:
    return PublishRequest(name=name, payload=UNSET if payload is None else payload, id=_opt(id))


def _schedule_body(
    workflow: str,
    cron: str,
    id: str | None,
    version: str | None,
    time_zone: str | None,
    input: Any,
    overlap: str | None,
    paused: bool | None,
    description: str | None,
) -> ScheduleRequest:
    return ScheduleRequest(
        workflow=workflow,
        cron=cron,
        id=_opt(id),
        version=_opt(version),
        time_zone=_opt(time_zone),
        input_=UNSET if input is None else input,
        overlap=UNSET if overlap is None else ScheduleRequestOverlap(overlap),
        paused=_opt(paused),
        description=_opt(description),
    )


def _batch_body(
    action: str,
    workflow: str | None,
    status: list[str] | None,
    started_after: _dt.datetime | None,
    started_before: _dt.datetime | None,
    reason: str | None,
) -> BatchRequest:
    if action not in ("cancel", "rerun", "pause", "resume"):
        raise ValueError("cairn: batch action must be cancel, rerun, pause or resume")
    f = BatchFilter(
        workflow=_opt(workflow),
        status=UNSET if status is None else [BatchFilterStatusItem(s) for s in status],
        started_after=_opt(started_after),
        started_before=_opt(started_before),
    )
    return BatchRequest(action=BatchRequestAction(action), filter_=f, reason=_opt(reason))


def _server_and_key(server: str | None, key: str | None) -> tuple[str, str]:
    s = (server or os.environ.get("CAIRN_SERVER") or DEFAULT_SERVER).rstrip("/")
    if not (s.startswith("http://") or s.startswith("https://")):
        raise ValueError(f"cairn: server {s!r} is not an http(s) URL such as {DEFAULT_SERVER}")
    k = key if key is not None else os.environ.get("CAIRN_KEY", "")
    return s, k


def _headers(key: str) -> dict[str, str]:
    h = {"User-Agent": f"cairn-python-sdk/{__version__}"}
    if key:
        h["Authorization"] = f"Bearer {key}"
    return h


class _Base:
    """What Client and AsyncClient share: the server, key, keyring and generated client, set up
    once, and the driving of an operation (_Driving) but for how it sleeps and calls."""

    server: str
    key: str
    api: AuthenticatedClient
    #: The keyring the client encrypts what it sends with and decodes what it
    #: reads with (client-side encryption, docs/SDK-PY.md); None: none.
    codec: Keyring | None
    _clear: _Clear

    def __init__(self, server: str | None, key: str | None, codec: Keyring | None) -> None:
        self.codec, self._clear = codec, _Clear()
        self.server, self.key = _server_and_key(server, key)
        # The generated client, given the SDK's httpx client by the subclass:
        # it carries the key (absent when none), the timeouts and the retries.
        self.api = AuthenticatedClient(base_url=self.server, token=self.key or "-")

    def _http_options(self, transport: Any) -> dict[str, Any]:
        """The options of the SDK's httpx client (blocking or async) over transport."""
        return {"base_url": self.server, "headers": _headers(self.key), "timeout": _TIMEOUT, "transport": transport}


class _Driving:
    """Drives an operation (_Op) to its end: next() is the next call or sleep to do (None: the
    operation returned, its value in result), and answering() records a call's answer or error,
    which the operation is given at the next next()."""

    def __init__(self, gen: _Op[Any], server: str) -> None:
        self.gen, self.server = gen, server
        self.value: Any = None
        self.error: BaseException | None = None
        self.result: Any = None

    def next(self) -> _Call | _Sleep | None:
        try:
            step = self.gen.throw(self.error) if self.error is not None else self.gen.send(self.value)
        except StopIteration as stop:
            self.result = stop.value
            return None
        self.value, self.error = None, None
        return step

    @contextmanager
    def answering(self) -> Iterator[None]:
        try:
            yield
        except httpx.TransportError as err:
            self.error = TransportError(self.server, err)
        except APIError as err:
            self.error = err

    def answer(self, resp: Response[Any]) -> None:
        self.value = _check(self.server, resp)


class Client(_Base):
    """A blocking client of the cairn API at server [$CAIRN_SERVER, else
    http://127.0.0.1:8080], with key [$CAIRN_KEY] sent as a bearer token. Safe
    to share between threads."""

    def __init__(
        self,
        server: str | None = None,
        key: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        codec: Keyring | None = None,
    ) -> None:
        super().__init__(server, key, codec)
        limits = httpx.Limits(max_connections=128, max_keepalive_connections=64)
        inner = transport or httpx.HTTPTransport(limits=limits)
        self.http = httpx.Client(**self._http_options(RetryTransport(inner)))
        self.api.set_httpx_client(self.http)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def store(self, namespace: str) -> Store:
        """A namespace of the long-term store (store.py)."""
        from .store import Store

        return Store(self, namespace)

    def _drive(self, gen: _Op[T]) -> T:
        d = _Driving(gen, self.server)
        while (step := d.next()) is not None:
            if isinstance(step, _Sleep):
                time.sleep(step.seconds)
                continue
            with d.answering():
                d.answer(step.op.sync_detailed(client=self.api, **step.kwargs))
        return d.result  # type: ignore[no-any-return]

    # ---- runs ----

    def start(self, workflow: str, input: Any = None, **opts: Unpack[_StartOptions]) -> StartedRun:
        """Starts a run of workflow. With an idempotency key, starting again returns the first run
        (existed True). deadline: a datetime, or seconds from now. budget replaces the workflow's.
        attributes are the run's search attributes (str, int, float, bool or datetime each; at most 16),
        which list filters on (attr)."""
        return self._drive(_op_start(workflow, input, self.codec, self._clear, **opts))

    def get(self, run: str) -> Run:
        return self._drive(_op_get(run, self.codec))

    def progress(self, run: str, after: int | None = None, wait_ms: int | None = None) -> RunProgress:
        """The run's progress; with after (a rev), held up to wait_ms until the run changes."""
        r = self._drive(_op_simple(get_run_status, run=run, after=_opt(after), wait_ms=_opt(wait_ms)))
        return r  # type: ignore[no-any-return]

    def wait(self, run: str, on_progress: Callable[[RunProgress], None] | None = None) -> Run:
        """Follows a run until it ends (long-polling its progress) and returns it. A run that
        failed is returned, not raised: look at its status. A function's run that continued
        as new is followed to the last run of the chain (its continued_from names the one
        before; get reads one run as it is)."""
        return self._drive(_op_wait(run, on_progress, self.codec))

    def result(self, run: str) -> Any:
        """Waits for the run and returns its output; raises RunFailedError when it did not complete."""
        from .errors import RunFailedError

        r = self.wait(run)
        if r.status.value != "completed":
            raise RunFailedError(r)
        return None if isinstance(r.output, Unset) else r.output

    def list(self, **filter: Unpack[_RunFilter]) -> RunPage:
        """One page of runs, newest first; page.next_cursor is the next page's cursor. attr are
        conditions on search attributes that all must hold ("name:value", "name>value", "name>=value",
        "name<value", "name<=value"): runs then come by the first one's value, newest first within one."""
        return self._drive(_op_list(**filter))

    def runs(self, **filters: Unpack[_RunFilter]) -> Iterator[RunSummary]:
        """Every run matching the filters of list, fetching pages as it goes."""
        while True:
            page = self.list(**filters)
            yield from page.runs
            if isinstance(page.next_cursor, Unset) or not page.next_cursor:
                return
            filters["cursor"] = page.next_cursor

    def journal(self, run: str) -> _List[JournalEntry]:
        return self._drive(_op_journal(run, self.codec))

    def stream(self, run: str) -> Iterator[StreamEvent]:
        """Follows a run: its status at each change, each new journal entry and
        its steps' progress values, until it ends (the last event is end). A
        connection the server closes (streams are bounded in time) or that
        breaks is opened again from the last event's id: status and journal
        resume where they were, progress sent meanwhile is missed. Raises
        APIError when the run cannot be followed (not found, refused), and
        the last error after 5 failed connections in a row."""
        return follow(self.http, self.server, run, self.codec)

    def send_event(self, run: str, name: str, payload: Any = None, *, id: str | None = None) -> EventResult:
        """Sends an event to a run: it completes the wait step waiting for name. An id makes sending
        again a no-op."""
        r = self._drive(_op_simple(send_event, run=run, body=_event_body(name, payload, id, self.codec)))
        return r  # type: ignore[no-any-return]

    def send_update(
        self, run: str, name: str, input: Any = None, *, id: str | None = None, wait_ms: int | None = None
    ) -> Update:
        """Sends update name with input to run and holds up to wait_ms for its answer: the first
        wait for the name (or a function's wait_for_update) takes it, and the answer is the output
        of the step the wait names as its answer (or the function's reply). Not answered by then,
        it is returned with status accepted: poll it with get_update. With an id, sending again is
        safe: the same update is answered, delivered once. What cannot be delivered raises an
        APIError: no wait of the run left for the name (422), an ended run, or the id sent with
        another input (409)."""
        body = _update_body(name, input, id, wait_ms, self.codec)
        return self._drive(_op_update(send_update, self.codec, run=run, body=body))

    def get_update(self, run: str, id: str, *, wait_ms: int | None = None) -> Update:
        """Update id of run, held up to wait_ms for its answer (at once by default)."""
        return self._drive(_op_update(get_update, self.codec, run=run, id=id, wait_ms=_opt(wait_ms)))

    def publish(self, name: str, payload: Any = None, *, id: str | None = None) -> PublishResult:
        """Publishes an event: every workflow whose newest version has a trigger of name it
        matches gets a run with payload as input, once per id (default: a new id, answered).
        The payload is sent as it is (triggers' conditions read it), not encrypted."""
        return self._drive(_op_simple(publish_event, body=_publish_body(name, payload, id)))  # type: ignore[no-any-return]

    def cancel(self, run: str, reason: str | None = None) -> Run:
        return self._drive(_op_view(cancel_run, self.codec, run=run, body=CancelRequest(reason=_opt(reason))))

    def advance_clock(self, seconds_: Duration) -> ClockResponse:
        """Moves the clock of a test server (``cairn dev --test-clock``) forward: the sleeps, wait
        timeouts, retry backoffs, deadlines and schedule ticks due by the new time have fired when
        it returns. A server without a test clock answers 404 (NotFound)."""
        return self._drive(_op_simple(advance_clock, body=_advance_body(seconds_)))  # type: ignore[no-any-return]

    def clock(self) -> ClockResponse:
        """A test server's clock: its time (now) and how far it was moved (offset_ms); 404 without one."""
        return self._drive(_op_simple(get_clock))  # type: ignore[no-any-return]

    def pause(self, run: str) -> Run:
        """Pauses a running run: none of its steps is offered to a worker, and its sleeps, backoffs,
        wait timeouts and deadline act only at its resume; attempts held go on and are recorded.
        Pausing a paused run changes nothing; an ended run is a 409."""
        return self._drive(_op_view(pause_run, self.codec, run=run))

    def resume(self, run: str) -> Run:
        """Resumes a paused run (a running one is left as it is; an ended one is a 409)."""
        return self._drive(_op_view(resume_run, self.codec, run=run))

    def resume_step(self, run: str, step: str, value: Any = None) -> Run:
        """Answers an interrupted step with value: its next attempt runs at once with
        ctx.resumed true and ctx.resume the value. Resuming again with the same value changes
        nothing; a step that is not interrupted is a 409."""
        body = ResumeStepRequest(value=value)
        return self._drive(_op_view(resume_step, self.codec, run=run, step=step, body=body))

    def rerun(self, run: str, *, from_step: str | None = None, idempotency_key: str | None = None) -> StartedRun:
        """Starts a new run from an ended one, reusing its completed steps (all of them, or those
        before from_step)."""
        body = RerunRequest(from_step=_opt(from_step), idempotency_key=_opt(idempotency_key))
        return self._drive(_op_started(rerun_run, self.codec, run=run, body=body))

    def delete_run(self, run: str, *, force: bool = False) -> None:
        self._drive(_op_simple(delete_run, run=run, force=force))

    # ---- workflows and workers ----

    def workflows(self) -> _List[WorkflowSummary]:
        return list(self._drive(_op_simple(list_workflows)).workflows)

    def workers(self) -> _List[WorkerInfo]:
        return list(self._drive(_op_simple(list_workers)).workers)

    def stop_worker(self, worker: str) -> None:
        """Says worker stopped (its drain ended): the server lists it as gone at once."""
        self._drive(_op_simple(stop_worker, worker=worker))

    def invalidate_cache(self, workflow: str, step: str, key: Any = _EVERY_KEY) -> int:
        """Deletes result cache entries of a workflow's step: with key (the value its cache key
        renders to), that key's only; without, every one. Answers how many were deleted; their
        next attempts run on a worker."""
        return self._drive(_op_invalidate_cache(workflow, step, key))

    # ---- schedules ----

    def create_schedule(
        self,
        workflow: str,
        cron: str,
        *,
        id: str | None = None,
        version: str | None = None,
        time_zone: str | None = None,
        input: Any = None,
        overlap: str | None = None,
        paused: bool | None = None,
        description: str | None = None,
    ) -> Schedule:
        body = _schedule_body(workflow, cron, id, version, time_zone, input, overlap, paused, description)
        return self._drive(_op_create_schedule(body, self.codec, self._clear))

    def get_schedule(self, id: str) -> Schedule:
        r = self._drive(_op_simple(get_schedule, schedule=id))
        return r  # type: ignore[no-any-return]

    def list_schedules(self, limit: int | None = None, cursor: str | None = None) -> SchedulePage:
        r = self._drive(_op_simple(list_schedules, limit=_opt(limit), cursor=_opt(cursor)))
        return r  # type: ignore[no-any-return]

    def pause_schedule(self, id: str) -> Schedule:
        r = self._drive(_op_simple(pause_schedule, schedule=id))
        return r  # type: ignore[no-any-return]

    def resume_schedule(self, id: str) -> Schedule:
        r = self._drive(_op_simple(resume_schedule, schedule=id))
        return r  # type: ignore[no-any-return]

    def delete_schedule(self, id: str) -> None:
        self._drive(_op_simple(delete_schedule, schedule=id))

    def backfill_schedule(
        self, id: str, start: _dt.datetime, end: _dt.datetime, max: int | None = None
    ) -> BackfillResult:
        body = BackfillRequest(from_=start, to=end, max_=_opt(max))
        r = self._drive(_op_simple(backfill_schedule, schedule=id, body=body))
        return r  # type: ignore[no-any-return]

    # ---- batches ----

    def start_batch(
        self,
        action: str,
        *,
        workflow: str | None = None,
        status: _List[str] | None = None,
        started_after: _dt.datetime | None = None,
        started_before: _dt.datetime | None = None,
        reason: str | None = None,
    ) -> Batch:
        """Cancels or reruns (action) every run matching the filter (at least one field)."""
        body = _batch_body(action, workflow, status, started_after, started_before, reason)
        r = self._drive(_op_simple(create_batch, body=body))
        return r  # type: ignore[no-any-return]

    def get_batch(self, id: str) -> Batch:
        r = self._drive(_op_simple(get_batch, batch=id))
        return r  # type: ignore[no-any-return]

    def wait_batch(self, id: str, interval: float = 1.0, timeout: float = 300.0) -> Batch:
        """Polls a batch every interval seconds until it is done; TimeoutError past timeout."""
        until = time.monotonic() + timeout
        while True:
            b = self.get_batch(id)
            if b.state.value == "done":
                return b
            if time.monotonic() > until:
                raise TimeoutError(f"cairn: batch {id} not done after {timeout}s (state {b.state.value})")
            time.sleep(interval)


class AsyncClient(_Base):
    """The asyncio form of :class:`Client`: the same operations, awaited."""

    def __init__(
        self,
        server: str | None = None,
        key: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        codec: Keyring | None = None,
    ) -> None:
        super().__init__(server, key, codec)
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=128)
        inner = transport or httpx.AsyncHTTPTransport(limits=limits)
        self.http = httpx.AsyncClient(**self._http_options(AsyncRetryTransport(inner)))
        self.api.set_async_httpx_client(self.http)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def store(self, namespace: str) -> AsyncStore:
        """A namespace of the long-term store (store.py), awaited."""
        from .store import AsyncStore

        return AsyncStore(self, namespace)

    async def _drive(self, gen: _Op[T]) -> T:
        import asyncio

        d = _Driving(gen, self.server)
        while (step := d.next()) is not None:
            if isinstance(step, _Sleep):
                await asyncio.sleep(step.seconds)
                continue
            with d.answering():
                d.answer(await step.op.asyncio_detailed(client=self.api, **step.kwargs))
        return d.result  # type: ignore[no-any-return]

    async def start(self, workflow: str, input: Any = None, **opts: Unpack[_StartOptions]) -> StartedRun:
        return await self._drive(_op_start(workflow, input, self.codec, self._clear, **opts))

    async def get(self, run: str) -> Run:
        return await self._drive(_op_get(run, self.codec))

    async def progress(self, run: str, after: int | None = None, wait_ms: int | None = None) -> RunProgress:
        return await self._drive(_op_simple(get_run_status, run=run, after=_opt(after), wait_ms=_opt(wait_ms)))

    async def wait(self, run: str, on_progress: Callable[[RunProgress], None] | None = None) -> Run:
        return await self._drive(_op_wait(run, on_progress, self.codec))

    async def result(self, run: str) -> Any:
        from .errors import RunFailedError

        r = await self.wait(run)
        if r.status.value != "completed":
            raise RunFailedError(r)
        return None if isinstance(r.output, Unset) else r.output

    async def list(self, **filter: Unpack[_RunFilter]) -> RunPage:
        return await self._drive(_op_list(**filter))

    async def runs(self, **filters: Unpack[_RunFilter]) -> AsyncIterator[RunSummary]:
        while True:
            page = await self.list(**filters)
            for r in page.runs:
                yield r
            if isinstance(page.next_cursor, Unset) or not page.next_cursor:
                return
            filters["cursor"] = page.next_cursor

    async def journal(self, run: str) -> _List[JournalEntry]:
        return await self._drive(_op_journal(run, self.codec))

    def stream(self, run: str) -> AsyncIterator[StreamEvent]:
        """Client.stream, as an async iterator: ``async for ev in client.stream(run)``."""
        return afollow(self.http, self.server, run, self.codec)

    async def send_event(self, run: str, name: str, payload: Any = None, *, id: str | None = None) -> EventResult:
        return await self._drive(_op_simple(send_event, run=run, body=_event_body(name, payload, id, self.codec)))

    async def send_update(
        self, run: str, name: str, input: Any = None, *, id: str | None = None, wait_ms: int | None = None
    ) -> Update:
        """Sends an update and holds for its answer (see Client.send_update)."""
        body = _update_body(name, input, id, wait_ms, self.codec)
        return await self._drive(_op_update(send_update, self.codec, run=run, body=body))

    async def get_update(self, run: str, id: str, *, wait_ms: int | None = None) -> Update:
        """Update id of run, held up to wait_ms for its answer (see Client.get_update)."""
        return await self._drive(_op_update(get_update, self.codec, run=run, id=id, wait_ms=_opt(wait_ms)))

    async def publish(self, name: str, payload: Any = None, *, id: str | None = None) -> PublishResult:
        return await self._drive(_op_simple(publish_event, body=_publish_body(name, payload, id)))

    async def cancel(self, run: str, reason: str | None = None) -> Run:
        return await self._drive(_op_view(cancel_run, self.codec, run=run, body=CancelRequest(reason=_opt(reason))))

    async def advance_clock(self, seconds_: Duration) -> ClockResponse:
        """Moves a test server's clock forward (see Client.advance_clock)."""
        return await self._drive(_op_simple(advance_clock, body=_advance_body(seconds_)))

    async def clock(self) -> ClockResponse:
        """A test server's clock (see Client.clock)."""
        return await self._drive(_op_simple(get_clock))

    async def pause(self, run: str) -> Run:
        """Pauses a running run (see Client.pause)."""
        return await self._drive(_op_view(pause_run, self.codec, run=run))

    async def resume(self, run: str) -> Run:
        """Resumes a paused run (see Client.resume)."""
        return await self._drive(_op_view(resume_run, self.codec, run=run))

    async def resume_step(self, run: str, step: str, value: Any = None) -> Run:
        """Answers an interrupted step (see Client.resume_step)."""
        body = ResumeStepRequest(value=value)
        return await self._drive(_op_view(resume_step, self.codec, run=run, step=step, body=body))

    async def rerun(self, run: str, *, from_step: str | None = None, idempotency_key: str | None = None) -> StartedRun:
        body = RerunRequest(from_step=_opt(from_step), idempotency_key=_opt(idempotency_key))
        return await self._drive(_op_started(rerun_run, self.codec, run=run, body=body))

    async def workflows(self) -> _List[WorkflowSummary]:
        return list((await self._drive(_op_simple(list_workflows))).workflows)

    async def workers(self) -> _List[WorkerInfo]:
        return list((await self._drive(_op_simple(list_workers))).workers)

    async def stop_worker(self, worker: str) -> None:
        await self._drive(_op_simple(stop_worker, worker=worker))

    async def invalidate_cache(self, workflow: str, step: str, key: Any = _EVERY_KEY) -> int:
        """Deletes result cache entries of a workflow's step (see Client.invalidate_cache)."""
        return await self._drive(_op_invalidate_cache(workflow, step, key))

    async def create_schedule(self, workflow: str, cron: str, **opts: Any) -> Schedule:
        body = _schedule_body(
            workflow,
            cron,
            opts.get("id"),
            opts.get("version"),
            opts.get("time_zone"),
            opts.get("input"),
            opts.get("overlap"),
            opts.get("paused"),
            opts.get("description"),
        )
        return await self._drive(_op_create_schedule(body, self.codec, self._clear))

    async def get_schedule(self, id: str) -> Schedule:
        return await self._drive(_op_simple(get_schedule, schedule=id))

    async def delete_schedule(self, id: str) -> None:
        await self._drive(_op_simple(delete_schedule, schedule=id))

    async def start_batch(self, action: str, **filter: Any) -> Batch:
        body = _batch_body(
            action,
            filter.get("workflow"),
            filter.get("status"),
            filter.get("started_after"),
            filter.get("started_before"),
            filter.get("reason"),
        )
        return await self._drive(_op_simple(create_batch, body=body))

    async def get_batch(self, id: str) -> Batch:
        return await self._drive(_op_simple(get_batch, batch=id))

"""Progress streams: a step body publishes progress (StepContext.progress),
and a client follows a run's status, journal and progress as Server-Sent
Events (Client.stream, AsyncClient.stream). The semantics are the Go SDK's
(sdk.Progress, Client.Stream; docs/API.md, "Progress streams").

The generated client reads whole answers, so the stream is read here with
httpx's streaming on the client's own httpx instance (its key, timeouts and
retries of a refused connection)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from ._api.api.runs import stream_run
from ._api.api.workers import progress_step
from ._api.client import AuthenticatedClient
from ._api.models import JournalEvent, ProgressEvent, ProgressRequest, RunProgress
from ._api.types import Response, Unset
from .codec import CodecError, Keyring, open_value
from .errors import APIError, TransportError, temporary

# The event names of a run's stream.
STATUS = "status"
JOURNAL = "journal"
PROGRESS = "progress"
END = "end"

# A connection that failed this many times in a row (no answer, or a
# temporary refusal) ends the stream with its error.
MAX_FAILS = 5


@dataclass
class StreamEvent:
    """One event of a run's stream: kind says which field is set."""

    #: status, journal, progress or end (or a kind this client does not know:
    #: then only data is set).
    kind: str
    #: The event's id (status, journal and end; "" for progress): the stream
    #: resumes after it.
    id: str = ""
    #: The run's progress (status, end).
    status: RunProgress | None = None
    #: A new journal entry (journal).
    journal: JournalEvent | None = None
    #: A step body's progress (progress): step, attempt, value, at, missed.
    progress: ProgressEvent | None = None
    #: The event's data as JSON decoded it.
    data: Any = field(default=None, repr=False)


def _typed(kind: str, id: str, data: Any, codec: Keyring | None) -> StreamEvent:
    ev = StreamEvent(kind=kind, id=id, data=data)
    if kind in (STATUS, END):
        ev.status = RunProgress.from_dict(data)
    elif kind == JOURNAL:
        ev.journal = JournalEvent.from_dict(data)
        e = ev.journal.entry
        if codec is not None and not isinstance(e.data, Unset):
            try:
                e.data = open_value(codec, e.data)
            except CodecError as err:
                raise CodecError(err.kind, f"decrypting a journal entry: {err}", err.kid) from err
    elif kind == PROGRESS:
        ev.progress = ProgressEvent.from_dict(data)
    return ev


class _Follow:
    """What following one run's stream keeps across its connections: the
    last event id, the event being read, the failures in a row."""

    kind: str
    id: str
    data: list[str]

    def __init__(self, server: str, run: str, codec: Keyring | None) -> None:
        self.server, self.run, self.codec = server, run, codec
        self.last = ""
        self.fails = 0  # connections in a row that failed
        self.got = False  # the connection being read brought a line
        self.ended = False  # the end event came
        self.pause = 0.0  # before the next connection
        self._reset()

    def _reset(self) -> None:
        self.kind, self.id, self.data = "", "", []

    def request(self) -> dict[str, Any]:
        """The arguments of httpx's stream() for the next connection."""
        kw = stream_run._get_kwargs(self.run)
        kw["headers"] = {"Accept": "text/event-stream"}
        if self.last:
            kw["headers"]["Last-Event-ID"] = self.last
        return kw

    def answered(self, status: int, body: bytes) -> None:
        """Starts reading a connection; raises the refusal of an answer other than 200."""
        self._reset()
        self.got = False
        if status != 200:
            raise APIError.from_body(status, body)

    def line(self, line: str) -> StreamEvent | None:
        """Reads one line of the stream; the event it completes, or None."""
        self.fails, self.got = 0, True
        if line == "":
            kind, id, data = self.kind, self.id, self.data
            self._reset()
            if not kind or not data:
                return None
            if id:
                self.last = id
            ev = _typed(kind, id, json.loads("\n".join(data)), self.codec)
            self.ended = kind == END
            return ev
        if line.startswith(":"):
            return None  # a comment: the keep-alive
        k, _, v = line.partition(":")
        v = v[1:] if v.startswith(" ") else v
        if k == "event":
            self.kind = v
        elif k == "id" and "\0" not in v:
            self.id = v
        elif k == "data":
            self.data.append(v)
        return None

    @contextlib.contextmanager
    def connection(self) -> Iterator[None]:
        """Around one connection: sets pause to the wait before the next, or
        raises when the run cannot be followed. A connection the server
        closed goes on at once (shortly if it brought nothing); each failure
        in a row waits longer, and the sixth, or a refusal that is not
        temporary (not found), is raised."""
        try:
            try:
                yield
            except httpx.TransportError as e:
                raise TransportError(self.server, e) from e
        except (TransportError, APIError) as err:
            self.fails += 1
            if not temporary(err) or self.fails > MAX_FAILS:
                raise
            self.pause = min(0.2 * self.fails, 5.0)
            return
        self.pause = 0.0 if self.got else 0.2


def follow(http: httpx.Client, server: str, run: str, codec: Keyring | None) -> Iterator[StreamEvent]:
    """Client.stream's iterator."""
    f = _Follow(server, run, codec)
    while True:
        with f.connection(), http.stream(**f.request()) as resp:
            f.answered(resp.status_code, resp.read() if resp.status_code != 200 else b"")
            for line in resp.iter_lines():
                ev = f.line(line)
                if ev is not None:
                    yield ev
                if f.ended:
                    return
        time.sleep(f.pause)


async def afollow(http: httpx.AsyncClient, server: str, run: str, codec: Keyring | None) -> AsyncIterator[StreamEvent]:
    """AsyncClient.stream's iterator."""
    f = _Follow(server, run, codec)
    while True:
        with f.connection():
            async with http.stream(**f.request()) as resp:
                f.answered(resp.status_code, await resp.aread() if resp.status_code != 200 else b"")
                async for line in resp.aiter_lines():
                    ev = f.line(line)
                    if ev is not None:
                        yield ev
                    if f.ended:
                        return
        await asyncio.sleep(f.pause)


# ---- publishing progress ----


def _retry_after(resp: Response[Any]) -> float | None:
    """The pause a 429 asks for (Retry-After-Ms, else Retry-After), None for
    a success; raises the refusal of any other answer."""
    if 200 <= resp.status_code < 300:
        return None
    if resp.status_code != 429:
        raise APIError.from_body(int(resp.status_code), resp.content)
    ms = resp.headers.get("retry-after-ms", "")
    if ms.isdigit():
        return max(int(ms), 10) / 1000
    s = resp.headers.get("retry-after", "")
    return max(float(s), 0.01) if s.isdigit() else 0.1


def _body(value: Any) -> ProgressRequest:
    json.dumps(value)  # refuse what does not encode now, in the caller
    return ProgressRequest(value=value)


class Sender:
    """Publishes one lease's progress, in the order its body gives values:
    from a plain body's thread (send, blocking) or on the worker's loop
    (asend)."""

    def __init__(self, server: str, api: AuthenticatedClient, aapi: AuthenticatedClient, lease: str) -> None:
        self.server, self.api, self.aapi, self.lease = server, api, aapi, lease
        self._lock = threading.Lock()
        self._alock: asyncio.Lock | None = None

    def send(self, value: Any, pause: Callable[[float], None]) -> None:
        """Sends value, waiting out 429s with pause (which raises when the
        body is cancelled meanwhile)."""
        body = _body(value)
        with self._lock:
            while True:
                try:
                    resp = progress_step.sync_detailed(self.lease, client=self.api, body=body)
                except httpx.TransportError as err:
                    raise TransportError(self.server, err) from err
                wait = _retry_after(resp)
                if wait is None:
                    return
                pause(wait)

    def asend(self, value: Any) -> asyncio.Task[None]:
        """Sends value on the running loop: a task, in order after the ones
        before it."""
        body = _body(value)
        if self._alock is None:
            self._alock = asyncio.Lock()
        lock = self._alock

        async def go() -> None:
            async with lock:
                while True:
                    try:
                        resp = await progress_step.asyncio_detailed(self.lease, client=self.aapi, body=body)
                    except httpx.TransportError as err:
                        raise TransportError(self.server, err) from err
                    wait = _retry_after(resp)
                    if wait is None:
                        return
                    await asyncio.sleep(wait)

        t = asyncio.get_running_loop().create_task(go())
        # A value not awaited that failed (the attempt ended) is dropped quietly.
        t.add_done_callback(lambda t: t.cancelled() or t.exception())
        return t

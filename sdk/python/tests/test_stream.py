"""Progress streams: a step body publishes progress (sync and async bodies,
over the lease's rate: the SDK waits as the server asks, in order), and a
client follows the run's stream to its end, reconnecting from the last id."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import DevServer, eventually, mem_logger, serving, start_server

import cairn


def _worker(c: cairn.Client, wf: cairn.Workflow) -> cairn.Worker:
    log, _ = mem_logger()
    return cairn.Worker(c, logger=log, claim_wait=2).register(wf)


def _collect(events: Iterator[cairn.StreamEvent], opened: threading.Event, out: list[cairn.StreamEvent]) -> None:
    """Reads a stream to its end into out; opened is set at its first event."""
    for ev in events:
        out.append(ev)
        opened.set()


def _progress_values(events: list[cairn.StreamEvent]) -> list[Any]:
    vals = []
    for ev in events:
        if ev.kind == "progress":
            assert ev.progress is not None and ev.id == ""
            assert (ev.progress.step, ev.progress.attempt) == ("count", 1), ev.progress
            assert not ev.progress.missed, f"the stream dropped {ev.progress.missed} values"
            vals.append(ev.progress.value)
    return vals


def _assert_ended(events: list[cairn.StreamEvent], run: str) -> None:
    assert events, "no event"
    end = events[-1]
    assert end.kind == "end" and end.status is not None and end.id, end
    assert end.status.id == run and end.status.status.value == "completed", end.status
    assert [e.kind for e in events].count("end") == 1
    assert events[0].kind in ("status", "journal"), events[0]


def test_a_sync_body_publishes_100_values_a_client_streams_in_order(server: DevServer) -> None:
    go = threading.Event()

    def count(ctx: cairn.StepContext, _input: Any) -> int:
        assert go.wait(30), "the test never let the step go"
        for i in range(100):
            ctx.progress({"i": i, "message": f"value {i}"})  # 50 a second, burst 20: past it, waits
        return 100

    wf = cairn.workflow("py-progress", "1").task("count", count)
    c = server.client
    with serving(_worker(c, wf)):
        run = c.start("py-progress").run.id
        events: list[cairn.StreamEvent] = []
        opened = threading.Event()
        t = threading.Thread(target=_collect, args=(c.stream(run), opened, events), daemon=True)
        t.start()
        assert opened.wait(15), "the stream brought nothing"
        go.set()  # the stream is open (its first event came after it subscribed): every value reaches it
        t.join(60)
        assert not t.is_alive(), f"the stream did not end; last events {events[-3:]}"
    _assert_ended(events, run)
    assert _progress_values(events) == [{"i": i, "message": f"value {i}"} for i in range(100)]
    p = [e.progress for e in events if e.progress is not None]
    # 100 values at 50 a second with a burst of 20 take at least 1.6 s: the
    # server refused some and the SDK waited and sent them again.
    assert (p[-1].at - p[0].at).total_seconds() > 1.2
    seqs = [e.journal.seq for e in events if e.journal is not None]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    statuses = [e for e in events if e.kind == "status"]
    assert statuses and all(e.status is not None and e.id.startswith(f"{e.status.rev}.") for e in statuses)


def test_an_async_body_publishes_in_order_and_async_client_streams(server: DevServer) -> None:
    async def count(ctx: cairn.StepContext, _input: Any) -> int:
        assert await asyncio.get_running_loop().run_in_executor(None, go.wait, 30), "the test never let the step go"
        for i in range(29):
            ctx.progress(i)  # not awaited: sent in order after the ones before
        await ctx.progress(29)
        with pytest.raises(TypeError):
            ctx.progress({1, 2})  # not JSON: refused at once
        return 30

    go = threading.Event()
    wf = cairn.workflow("py-progress-async", "1").task("count", count)
    with serving(_worker(server.client, wf)):

        async def main() -> list[cairn.StreamEvent]:
            async with cairn.AsyncClient(server.url) as ac:
                run = (await ac.start("py-progress-async")).run.id
                out: list[cairn.StreamEvent] = []
                async for ev in ac.stream(run):
                    out.append(ev)
                    go.set()
                assert out[-1].status is not None and out[-1].status.id == run
                return out

        events = asyncio.run(asyncio.wait_for(main(), 60))
    assert events[-1].kind == "end"
    assert _progress_values(events) == list(range(30))


def test_progress_outside_a_worker_is_refused() -> None:
    info: Any = None
    ctx = cairn.StepContext(info, None, {}, {}, mem_logger()[0], None, None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="worker"):
        ctx.progress(1)


@pytest.fixture(scope="module")
def short_streams() -> Iterator[DevServer]:
    """A server whose streams last 1.6 s (4/5 of a 2 s request limit)."""
    s = start_server(env={"CAIRN_MAX_REQUEST_TIME": "2s"})
    yield s
    s.stop()


def test_the_stream_resumes_from_the_last_id(short_streams: DevServer) -> None:
    """A run waits for an event across several of the server's stream
    closes: the client opens the stream again from the last id, so no
    status or journal entry comes twice, and it ends at end."""
    c = short_streams.client
    wf = cairn.workflow("py-stream-resume", "1").task("a", lambda ctx, i: 1).wait("w", "go", after=["a"], timeout=120)
    connections = 0
    real = c.http.stream

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal connections
        connections += 1
        return real(*args, **kwargs)

    def waiting(run: str) -> bool:
        return any(s.id == "w" and s.status.value == "waiting" for s in c.progress(run).steps)

    c.http.stream = counting  # type: ignore[method-assign]
    try:
        with serving(_worker(c, wf)):
            run = c.start("py-stream-resume").run.id
            events: list[cairn.StreamEvent] = []

            def release() -> None:
                eventually(lambda: waiting(run), 30, "the run waits")
                n = connections
                eventually(lambda: connections >= n + 2, 30, "the stream opened again twice")
                c.send_event(run, "go")

            t = threading.Thread(target=release, daemon=True)
            t.start()
            for ev in c.stream(run):
                events.append(ev)
            t.join(5)
    finally:
        c.http.stream = real  # type: ignore[method-assign]
    assert connections >= 3, f"{connections} connections: the server's closes were not followed"
    _assert_ended(events, run)
    ids = [e.id for e in events if e.kind in ("status", "journal")]
    assert all(ids) and len(ids) == len(set(ids)), f"an event came twice: {ids}"
    seqs = [e.journal.seq for e in events if e.journal is not None]
    assert seqs == list(range(1, len(seqs) + 1)), seqs


def test_a_run_that_is_not_one_is_refused(server: DevServer) -> None:
    with pytest.raises(cairn.APIError) as e:
        next(iter(server.client.stream("7YBPXXN0SUCHRVN000000000000")))
    assert e.value.status == 404, e.value

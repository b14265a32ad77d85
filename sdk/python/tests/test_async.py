"""The asyncio worker (``async def`` bodies on the event loop) and the
AsyncClient, against a real cairn dev; usage from OpenTelemetry spans."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

from conftest import DevServer, mem_logger, step
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

import cairn


async def _serving(w: cairn.Worker) -> asyncio.Task[None]:
    task = asyncio.create_task(w.serve_async())
    for _ in range(300):
        if w.ready.is_set():
            return task
        if task.done():
            task.result()
            raise AssertionError("serve_async returned before the worker was ready")
        await asyncio.sleep(0.05)
    raise AssertionError(f"worker {w.id} did not become ready in 15 s")


async def _stop(w: cairn.Worker, task: asyncio.Task[None]) -> None:
    w.stop()
    await asyncio.wait_for(task, 60)


@contextlib.asynccontextmanager
async def _served(server: DevServer, w: cairn.Worker) -> AsyncIterator[cairn.AsyncClient]:
    """Serves w on the event loop while the block runs, with an AsyncClient
    of server; stops w after."""
    async with cairn.AsyncClient(server.url) as c:
        task = await _serving(w)
        try:
            yield c
        finally:
            await _stop(w, task)


def _worker(server: DevServer, wf: cairn.Workflow, **kw: Any) -> cairn.Worker:
    log, _ = mem_logger()
    return cairn.Worker(server.client, logger=log, claim_wait=2, **kw).register(wf)


def test_asyncio_worker_runs_100_steps_at_once(server: DevServer) -> None:
    n = 100

    async def main() -> None:
        running = 0
        peak = 0
        all_in = asyncio.Event()

        async def item(ctx: cairn.StepContext, x: int) -> int:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            if running == n:
                all_in.set()
            # Every body waits until all 100 run at once: the test fails
            # (timeout) unless the worker holds 100 leases concurrently.
            await asyncio.wait_for(all_in.wait(), 60)
            await asyncio.sleep(0)
            running -= 1
            return x * 2

        wf = cairn.workflow("hundred-py", "1").map("double", "input.items", item, max_concurrency=n)
        async with _served(server, _worker(server, wf, concurrency=n)) as c:
            started = await c.start("hundred-py", {"items": list(range(n))})
            done = await asyncio.wait_for(c.wait(started.run.id), 90)
        assert done.status.value == "completed", done.error
        assert done.output == [x * 2 for x in range(n)]
        assert peak == n

    asyncio.run(main())


def test_async_body_cancelled_when_the_run_ends(server: DevServer) -> None:
    async def main() -> None:
        began = asyncio.Event()
        causes: list[Any] = []

        async def wait_forever(ctx: cairn.StepContext, _: Any) -> None:
            began.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                causes.append(ctx.cause)
                raise

        wf = cairn.workflow("cancel-py", "1").task("long", wait_forever)
        async with _served(server, _worker(server, wf)) as c:
            run = (await c.start("cancel-py")).run.id
            await asyncio.wait_for(began.wait(), 15)
            cancelled = await c.cancel(run, "no longer needed")
            assert cancelled.status.value == "cancelled"
            for _ in range(200):  # the next heartbeat says run_terminal
                if causes:
                    break
                await asyncio.sleep(0.05)
        assert len(causes) == 1 and isinstance(causes[0], cairn.RunEnded), causes

    asyncio.run(main())


def test_attempt_timeout(server: DevServer) -> None:
    async def main() -> None:
        async def slow(ctx: cairn.StepContext, _: Any) -> None:
            await asyncio.sleep(30)

        wf = cairn.workflow("timeout-py", "1").task("slow", slow, timeout=0.5, retry=cairn.RetryPolicy(max_attempts=1))
        async with _served(server, _worker(server, wf)) as c:
            run = (await c.start("timeout-py")).run.id
            done = await asyncio.wait_for(c.wait(run), 30)
        assert done.status.value == "failed"
        assert done.error.class_ == "timeout", done.error

    asyncio.run(main())


def test_usage_from_spans(server: DevServer) -> None:
    tp = TracerProvider()

    def llm(ctx: cairn.StepContext, _: Any) -> str:
        tracer = tp.get_tracer("test")
        # Spans opened under the step's span (it is current in the body), and
        # every span under those, add their tokens to the step.
        with tracer.start_as_current_span("chat", attributes={"gen_ai.request.model": "m1"}) as s:
            s.set_attribute("gen_ai.usage.input_tokens", 100)
            s.set_attribute("gen_ai.usage.output_tokens", 20)
            with tracer.start_as_current_span("tool", attributes={"cairn.usage.tool_calls": 2}):
                pass
        with ctx.tracer.start_as_current_span("chat2") as s2:
            s2.set_attribute("gen_ai.response.model", "m1")
            s2.set_attribute("gen_ai.usage.input_tokens", 5)
            s2.set_attribute("gen_ai.usage.output_tokens", 1)
        return "ok"

    async def allm(ctx: cairn.StepContext, _: Any) -> str:
        with tp.get_tracer("test").start_as_current_span("achat") as s:
            await asyncio.sleep(0)
            s.set_attribute("gen_ai.response.model", "m2")
            s.set_attribute("gen_ai.usage.input_tokens", 7)
            s.set_attribute("gen_ai.usage.output_tokens", 3)
        return "ok"

    wf = cairn.workflow("usage-py", "1").task("llm", llm).task("allm", allm, after=["llm"])
    reader = InMemoryMetricReader()
    w = _worker(server, wf, tracer_provider=tp, meter_provider=MeterProvider([reader]))

    async def main() -> Any:
        async with _served(server, w) as c:
            run = (await c.start("usage-py")).run.id
            return await asyncio.wait_for(c.wait(run), 30)

    done = asyncio.run(main())
    assert done.status.value == "completed", done.error
    u = step(done, "llm").usage
    assert (u.input_tokens, u.output_tokens, u.model) == (105, 21, "m1")
    assert u.counters.additional_properties == {"tool_calls": 2}
    u2 = step(done, "allm").usage
    assert (u2.input_tokens, u2.output_tokens, u2.model) == (7, 3, "m2")
    # The worker's metrics: steps by outcome, leases held.
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        m.name: list(m.data.data_points) for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    completed = [p for p in points["cairn.worker.steps"] if p.attributes == {"outcome": "completed"}]
    assert completed and completed[0].value == 2, points["cairn.worker.steps"]
    assert points["cairn.worker.leases"][0].value == 0


def test_async_client_events_reruns_schedules_batches(server: DevServer) -> None:
    async def main() -> None:
        wf = (
            cairn.workflow("events-py", "1")
            .wait("approval", "approved", timeout=60)
            .task(
                "after", lambda ctx, x: {"approved_by": x["by"]}, after=["approval"], input="${steps.approval.output}"
            )
        )
        async with _served(server, _worker(server, wf)) as c:
            run = (await c.start("events-py", correlation="order-7")).run.id
            ev = await c.send_event(run, "approved", {"by": "bob"}, id="ev-1")
            assert ev is not None
            done = await asyncio.wait_for(c.wait(run), 30)
            assert done.status.value == "completed", done.error
            assert done.output == {"approved_by": "bob"}
            assert done.correlation == "order-7"
            assert await c.result(run) == {"approved_by": "bob"}
            re = await c.rerun(run)
            assert re.run.rerun_of == run
            # The rerun reuses the completed steps: it completes on its own.
            redone = await asyncio.wait_for(c.wait(re.run.id), 30)
            assert redone.status.value == "completed"
            summaries = [r async for r in c.runs(workflow="events-py", limit=1)]
            assert {r.id for r in summaries} >= {run, re.run.id}

            sch = await c.create_schedule("events-py", "@every 1h", id="hourly-py", paused=True)
            assert sch.id == "hourly-py"
            assert (await c.get_schedule("hourly-py")).paused
            await c.delete_schedule("hourly-py")

            pending = (await c.start("events-py")).run.id
            b = await c.start_batch("cancel", workflow="events-py", status=["running"], reason="cleanup")
            for _ in range(200):
                if b.state.value == "done":
                    break
                await asyncio.sleep(0.05)
                b = await c.get_batch(b.id)
            assert b.state.value == "done"
            assert (await c.get(pending)).status.value == "cancelled"

    asyncio.run(main())


def test_sync_client_schedules(server: DevServer) -> None:
    c = server.client
    cairn_wf = cairn.workflow("sched-py", "1").task("a", lambda ctx, x: 1)
    log, _ = mem_logger()
    from conftest import serving

    with serving(cairn.Worker(c, logger=log, claim_wait=1).register(cairn_wf)):
        s = c.create_schedule("sched-py", "0 * * * *", id="s-py", input={"k": 1})
        assert c.pause_schedule(s.id).paused
        assert not c.resume_schedule(s.id).paused
        page = c.list_schedules()
        assert any(x.id == "s-py" for x in page.schedules)
        now = dt.datetime.now(dt.UTC)
        bf = c.backfill_schedule(s.id, now - dt.timedelta(hours=3), now)
        assert len(bf.ticks) >= 2
        c.delete_schedule(s.id)
        try:
            c.get_schedule(s.id)
        except cairn.APIError as e:
            assert e.status == 404 and cairn.is_not_found(e)
        else:
            raise AssertionError("a deleted schedule is still there")


def test_async_pause_and_resume(server: DevServer) -> None:
    async def main() -> None:
        wf = cairn.workflow("pause-async-py", "1").wait("hold", "go")
        log, _ = mem_logger()
        w = cairn.Worker(server.client, logger=log, claim_wait=2).register(wf)
        async with cairn.AsyncClient(server.url) as c:
            task = await _serving(w)
            try:
                run = (await c.start("pause-async-py")).run.id
                assert (await c.pause(run)).status.value == "paused"
                await c.send_event(run, "go")
                assert (await c.get(run)).status.value == "paused"
                # The wait completed while paused: the resume completes the run.
                assert (await c.resume(run)).status.value == "completed"
                done = await asyncio.wait_for(c.wait(run), 30)
                assert done.status.value == "completed", done.error
            finally:
                await _stop(w, task)

    asyncio.run(main())

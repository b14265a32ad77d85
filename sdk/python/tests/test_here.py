"""run_here against a real cairn dev: a script drives a DAG and a durable
function (with a suspending sleep) alone, and its claims, scoped to its run,
never take another run's step."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from conftest import DevServer, mem_logger, serving, step

import cairn
from cairn._api.types import Unset


def test_a_script_drives_a_dag_alone_and_takes_no_other_run(server: DevServer) -> None:
    other: list[str] = []
    strays: list[str] = []

    def double(ctx: cairn.StepContext, inp: dict[str, Any]) -> int:
        if ctx.info.run in other:
            strays.append(ctx.info.run)
        return int(inp["n"]) * 2

    def add(ctx: cairn.StepContext, _: Any) -> int:
        return int(ctx.output("double")) + 1

    wf = (
        cairn.workflow("here-dag-py", "1")
        .task("double", double, input={"n": "${input.n}"})
        .task("add", add, after=["double"])
    )
    # Register the workflow (a worker that stops at once), then start another
    # run of it that nothing serves.
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log, claim_wait=1).register(wf)):
        pass
    other.append(server.client.start("here-dag-py", {"n": 100}).run.id)

    done = cairn.run_here(server.client, wf, {"n": 20}, logger=log, claim_wait=2)
    assert done.status.value == "completed", done.error
    assert done.output == 41
    assert done.id != other[0]

    o = server.client.get(other[0])
    assert o.status.value == "running"
    assert not strays
    for st in o.steps:
        assert not st.attempts and isinstance(st.holder, Unset), f"the other run's step {st.id} was touched: {st}"
        assert st.status.value in ("ready", "pending"), st.status


def test_a_script_drives_a_durable_function_through_a_suspension(server: DevServer) -> None:
    bodies: list[int] = []

    async def body(fc: cairn.Durable, n: int) -> int:
        bodies.append(n)
        v = await fc.step("inc", lambda: n + 1)
        await fc.sleep("rest", 2.5)  # suspends: a second attempt replays
        return int(v) * 10

    wf = cairn.function("here-fn-py", "1", body)
    log, _ = mem_logger()
    done = cairn.run_here(server.client, wf, 1, logger=log, claim_wait=2)
    assert done.status.value == "completed", done.error
    assert done.output == 20
    assert [a.outcome.value for a in step(done, "main").attempts] == ["suspended", "completed"]
    assert len(bodies) == 2


def test_cancelling_the_script_stops_serving_and_leaves_the_run_running(server: DevServer) -> None:
    began = threading.Event()
    started: list[str] = []

    def hold(ctx: cairn.StepContext, _: Any) -> None:
        started.append(ctx.info.run)
        began.set()
        ctx.wait(30)
        ctx.raise_if_cancelled()

    wf = cairn.workflow("here-stop-py", "1").task("hold", hold)
    log, _ = mem_logger()

    async def main() -> None:
        t = asyncio.create_task(cairn.run_here_async(server.client, wf, None, logger=log, claim_wait=2, drain_timeout=0.1))
        await asyncio.get_running_loop().run_in_executor(None, began.wait, 15)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

    asyncio.run(main())
    assert started
    assert server.client.get(started[0]).status.value == "running"

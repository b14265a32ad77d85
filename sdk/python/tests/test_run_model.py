"""The run model against a real cairn dev: budgets, state reducers, attempt
summaries, label routing, singleton runs and cancel_on."""

from __future__ import annotations

import threading
from typing import Any

from conftest import DevServer, mem_logger, serving, wait_run

import cairn


def test_a_budget_stops_a_run(server: DevServer) -> None:
    acted: list[str] = []

    def call(ctx: cairn.StepContext, _: Any) -> int:
        ctx.set_usage(cairn.Usage(counters={"searches": 2}))
        if ctx.info.step == "search" and ctx.info.attempt == 1:
            raise cairn.retryable("throttled")
        return 1

    wf = (
        cairn.workflow("budget-py", "1", budget={"counters": {"searches": 5}})
        .task("plan", call)
        .task("search", call, after=["plan"], retry=cairn.RetryPolicy(max_attempts=3, initial_backoff=0.01))
        .task("act", lambda ctx, _: acted.append(ctx.info.run), after=["search"])
    )
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log).register(wf)):
        r = wait_run(server.client, server.client.start("budget-py").run.id)
        assert r.status.value == "failed"
        assert r.error.class_ == "budget_exceeded" and r.error.step == "search"
        assert r.usage.counters["searches"] == 6 and acted == []
        r = wait_run(server.client, server.client.start("budget-py", budget={"counters": {"searches": 50}}).run.id)
        assert r.status.value == "completed" and len(acted) == 1


def test_reducers_fold_parallel_writers(server: DevServer) -> None:
    def hit(ctx: cairn.StepContext, _: Any) -> str:
        ctx.set_state_patch({"hits": 5, "ids": [ctx.info.step]})
        return ctx.info.step

    wf = cairn.workflow("reduce-py", "1", reducers={"hits": "sum", "ids": "append"})
    for s in ("a", "b", "c"):
        wf.task(s, hit)
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log, concurrency=3).register(wf)):
        r = wait_run(server.client, server.client.start("reduce-py").run.id)
        assert r.status.value == "completed"
        state = r.state.to_dict()
        assert state["hits"] == 15 and sorted(state["ids"]) == ["a", "b", "c"]


def test_summaries_reach_their_attempts(server: DevServer) -> None:
    def fetch(ctx: cairn.StepContext, _: Any) -> int:
        try:
            ctx.set_summary("x" * 5000)
            raise AssertionError("a 5,000-byte summary was taken")
        except ValueError:
            pass
        if ctx.info.attempt == 1:
            ctx.set_summary({"pages": 2, "stopped": "rate limit"})
            raise cairn.retryable("rate limited")
        ctx.set_summary("fetched 3 pages")
        return 3

    wf = cairn.workflow("summary-py", "1").task("fetch", fetch, retry=cairn.RetryPolicy(max_attempts=2, initial_backoff=0.01))
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log).register(wf)):
        r = wait_run(server.client, server.client.start("summary-py").run.id)
        assert r.status.value == "completed"
        attempts = next(s for s in r.steps if s.id == "fetch").attempts
        assert [a.summary for a in attempts] == [{"pages": 2, "stopped": "rate limit"}, "fetched 3 pages"]


def test_a_step_requiring_labels_runs_on_the_worker_with_them(server: DevServer) -> None:
    ran: list[str] = []

    def train(ctx: cairn.StepContext, _: Any) -> bool:
        ran.append(ctx.info.worker)
        return True

    def wf() -> cairn.Workflow:
        return cairn.workflow("route-py", "1").task("train", train, requires_labels={"gpu": "true"})

    log, _ = mem_logger()
    plain = cairn.Worker(server.client, logger=log, name="plain-py").register(wf())
    gpu = cairn.Worker(server.client, logger=log, name="gpu-py", labels={"gpu": "true"}).register(wf())
    with serving(plain), serving(gpu):
        for _ in range(3):
            assert wait_run(server.client, server.client.start("route-py").run.id).status.value == "completed"
    assert ran == ["gpu-py"] * 3


def test_a_singleton_start_is_skipped_while_its_run_runs(server: DevServer) -> None:
    release = threading.Event()

    def sync(ctx: cairn.StepContext, _: Any) -> int:
        release.wait(30)
        return 1

    wf = cairn.workflow("one-sync-py", "1", singleton={"key": "${input.account}", "mode": "skip"}).task("sync", sync)
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log).register(wf)):
        first = server.client.start("one-sync-py", {"account": "a1"})
        again = server.client.start("one-sync-py", {"account": "a1"})
        release.set()
        assert again.skipped and again.existed and again.run.id == first.run.id and not first.skipped
        assert wait_run(server.client, first.run.id).status.value == "completed"


def test_a_published_event_cancels_the_run_it_matches(server: DevServer) -> None:
    def hold(ctx: cairn.StepContext, _: Any) -> int:
        ctx.wait(30)  # returns early when the run is cancelled
        return 0

    wf = cairn.workflow(
        "order-py", "1", cancel_on=[{"event": "order.void", "if": "event.payload.order == input.order"}]
    ).task("hold", hold)
    c = server.client
    log, _ = mem_logger()
    with serving(cairn.Worker(c, logger=log).register(wf)):
        one = c.start("order-py", {"order": 1}).run.id
        two = c.start("order-py", {"order": 2}).run.id
        res = c.publish("order.void", {"order": 1})
        assert list(res.cancelled) == [one]
        assert c.get(one).status.value == "cancelled"
        c.cancel(two, "test over")

"""The synchronous worker (plain bodies on threads) against a real cairn dev."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ROOT,
    DevServer,
    DropHeartbeats,
    eventually,
    mem_logger,
    run_example,
    serving,
    start_server,
    step,
    use_transport,
    wait_run,
)

import cairn
from cairn._api.types import Unset

sys.path.insert(0, str(ROOT / "examples" / "python"))
from triage import triage


def test_triage_completes(server: DevServer) -> None:
    c = server.client
    log, _ = mem_logger()
    w = cairn.Worker(c, name="py-triage", logger=log, claim_wait=2).register(triage)
    with serving(w):
        ticket = {
            "subject": "Charged twice",
            "body": "URGENT: I was charged twice for my order",
            "customer": "ana@bigcorp.com",
        }
        started = c.start("triage", ticket, idempotency_key="ticket-1")
        again = c.start("triage", ticket, idempotency_key="ticket-1")
        assert again.existed and again.run.id == started.run.id
        progress: list[int] = []
        done = c.wait(started.run.id, on_progress=lambda p: progress.append(p.steps_done))
        assert done.status.value == "completed", done.error
        assert done.output == {
            "queue": "billing-priority",
            "text": 'Hi ana@bigcorp.com, thanks for reaching out about "Charged twice". Your ticket is with our '
            "billing-priority team; expect an answer within 4 hours.",
        }
        state = done.state.additional_properties
        assert state["category"] == "billing" and state["queue"] == "billing-priority"
        assert progress, "wait reported progress"
        assert done.usage.input_tokens == 9
        assert all(a.worker == "py-triage" for s in done.steps for a in s.attempts)
        page = c.list(workflow="triage")
        assert any(r.id == started.run.id for r in page.runs)
        assert any(r.id == started.run.id for r in c.runs(workflow="triage", limit=1))
        assert [e for e in c.journal(started.run.id) if e.type_.value == "run_completed"]


def test_retries_and_error_classes(server: DevServer) -> None:
    attempts: list[int] = []

    def fetch(ctx: cairn.StepContext, _: Any) -> dict[str, Any]:
        attempts.append(ctx.info.attempt)
        if len(attempts) < 3:
            raise cairn.retryable(f"upstream 503 (attempt {len(attempts)})")
        return {"attempts": len(attempts), "key": ctx.idempotency_key}

    def declined(ctx: cairn.StepContext, _: Any) -> None:
        raise cairn.failure("card_declined", "the card was declined")

    fast = cairn.RetryPolicy(max_attempts=5, initial_backoff=0.05)
    wf = (
        cairn.workflow("flaky-py", "1")
        .task("fetch", fetch, retry=fast)
        .task(
            "declined",
            declined,
            after=["fetch"],
            retry=cairn.RetryPolicy(max_attempts=5, initial_backoff=0.05, non_retryable=["card_declined"]),
        )
    )
    crashes: list[int] = []

    def crash(ctx: cairn.StepContext, _: Any) -> None:
        crashes.append(1)
        raise KeyError("no such thing")  # anything else is fatal

    typed: list[int] = []

    def quota(ctx: cairn.StepContext, _: Any) -> str:
        typed.append(1)
        if len(typed) < 2:
            raise cairn.failure("quota_exceeded", "try later")  # not listed: retried
        return "ok"

    wf2 = (
        cairn.workflow("classes-py", "1")
        .task("quota", quota, retry=fast)
        .task("crash", crash, after=["quota"], retry=fast)
    )
    log, _ = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=2).register(wf, wf2)
    with serving(w):
        c = server.client
        r1, r2 = c.start("flaky-py").run.id, c.start("classes-py").run.id
        done = wait_run(c, r1)
        assert done.status.value == "failed"
        assert attempts == [1, 2, 3]
        f = step(done, "fetch")
        assert f.status.value == "completed" and f.output["attempts"] == 3
        assert f.output["key"]
        assert (done.error.class_, done.error.step) == ("card_declined", "declined")
        assert len(step(done, "declined").attempts) == 1, "a non-retryable class is not retried"

        done2 = wait_run(c, r2)
        assert done2.status.value == "failed"
        assert step(done2, "quota").output == "ok" and len(typed) == 2
        assert done2.error.class_ == "fatal" and "no such thing" in done2.error.message
        assert len(crashes) == 1, "a plain exception is fatal: not retried"
        assert "Traceback" not in done2.error.message


def test_at_most_once_never_runs_again(server: DevServer) -> None:
    bodies: list[int] = []

    def charge(ctx: cairn.StepContext, _: Any) -> None:
        bodies.append(1)
        raise cairn.RetryableError("connection reset after the charge was sent")

    wf = cairn.workflow("amo-py", "1").task(
        "charge", charge, at_most_once=True, retry=cairn.RetryPolicy(max_attempts=5, initial_backoff=0.05)
    )
    log, _ = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=2).register(wf)
    with serving(w):
        run = server.client.start("amo-py").run.id
        done = wait_run(server.client, run)
        assert done.status.value == "failed"
        assert done.error.class_ == "retryable"
        a = step(done, "charge").attempts
        assert len(a) == 1 and not isinstance(a[0].started_at, Unset), "the at_most_once attempt was started"
        # A retry, were there one, would be scheduled at 50 ms.
        time.sleep(0.5)
        assert len(bodies) == 1


def test_fenced_lease_cancels_the_body(server: DevServer, monkeypatch: Any) -> None:
    # Heartbeats are dropped while the first attempt runs, so its lease expires
    # and the reaper offers the step again; the next heartbeat of the first
    # attempt is refused fenced, which cancels its body.
    transport = DropHeartbeats(drop=True)
    use_transport(monkeypatch, transport)
    causes: list[Any] = []
    told = threading.Event()

    def slow(ctx: cairn.StepContext, _: Any) -> dict[str, int]:
        if ctx.info.attempt == 1:
            if not ctx.wait(30):
                raise AssertionError("the first attempt was never cancelled")
            causes.append(ctx.cause)
            told.set()
            ctx.raise_if_cancelled()
        transport.drop.clear()
        # Hold the second attempt until the first one was told.
        assert told.wait(30), "the first attempt was not told within 30 s"
        return {"attempt": ctx.info.attempt}

    wf = cairn.workflow("fenced-py", "1").task("slow", slow)
    log, rec = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=1, concurrency=2).register(wf)
    with serving(w):
        run = server.client.start("fenced-py").run.id
        done = wait_run(server.client, run)
        assert done.status.value == "completed"
        assert done.output == {"attempt": 2}
        assert len(causes) == 1 and isinstance(causes[0], cairn.LeaseLost), causes
        attempts = step(done, "slow").attempts
        assert attempts[0].outcome.value != "completed"
    assert any("fenced" in m for m in rec.messages())


def test_drain(server: DevServer) -> None:
    gate, running = threading.Event(), threading.Event()

    def work(ctx: cairn.StepContext, _: Any) -> dict[str, Any]:
        running.set()
        assert gate.wait(30)
        return {"done": True, "attempt": ctx.info.attempt}

    wf = cairn.workflow("drain-py", "1").task("work", work)
    log, _ = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=2, drain_timeout=10).register(wf)
    c = server.client
    t = threading.Thread(target=w.serve, kwargs={"handle_signals": False}, daemon=True)
    t.start()
    assert w.wait_ready(15)
    run = c.start("drain-py").run.id
    assert running.wait(15), "the body did not start"
    w.stop()
    t.join(0.3)
    assert t.is_alive(), "serve waits for the running body"
    gate.set()
    t.join(30)
    assert not t.is_alive()
    done = wait_run(c, run)
    assert done.status.value == "completed"
    assert done.output == {"done": True, "attempt": 1}
    me = [x for x in c.workers() if x.id == w.id]
    assert me and not me[0].alive and not isinstance(me[0].stopped_at, Unset), me

    # Past the drain timeout: the body is cancelled (Shutdown) and the attempt
    # reported interrupted; another worker finishes it.
    running2 = threading.Event()

    def work2(ctx: cairn.StepContext, _: Any) -> dict[str, int]:
        if ctx.info.attempt == 1:
            running2.set()
            ctx.wait(30)
            ctx.raise_if_cancelled()
        return {"attempt": ctx.info.attempt}

    wf2 = cairn.workflow("drain2-py", "1").task("work", work2)
    w2 = cairn.Worker(c, logger=log, claim_wait=2, drain_timeout=0.2).register(wf2)
    t2 = threading.Thread(target=w2.serve, kwargs={"handle_signals": False}, daemon=True)
    t2.start()
    assert w2.wait_ready(15)
    r2 = c.start("drain2-py").run.id
    assert running2.wait(15)
    w2.stop()
    t2.join(30)
    assert not t2.is_alive()
    w3 = cairn.Worker(c, logger=log, claim_wait=2).register(wf2)
    with serving(w3):
        done2 = wait_run(c, r2)
        assert done2.status.value == "completed"
        first = step(done2, "work").attempts[0]
        assert first.error.class_ == "interrupted", first


def test_unservable(server: DevServer) -> None:
    ran_b: list[int] = []

    def b(ctx: cairn.StepContext, _: Any) -> int:
        ran_b.append(1)
        return len(ran_b)

    partial = cairn.workflow("unserv-py", "1").task("a", lambda ctx, _: 1).remote_task("b", after=["a"])
    full = cairn.workflow("unserv-py", "1").task("a", lambda ctx, _: 1).task("b", b, after=["a"])
    c = server.client
    log, rec = mem_logger()
    w1 = cairn.Worker(c, name="w-partial", logger=log, claim_wait=1).register(partial)
    with serving(w1):
        run = c.start("unserv-py").run.id
        eventually(
            lambda: any(j.type_.value == "step_requeued" for j in c.journal(run)), 10, "the unservable step requeued"
        )
        assert not ran_b
        assert any("unservable" in m for m in rec.messages())
        log2, _ = mem_logger()
        with serving(cairn.Worker(c, name="w-full", logger=log2, claim_wait=1).register(full)):
            done = wait_run(c, run)
    assert done.status.value == "completed"
    assert done.output == 1
    sb = step(done, "b")
    assert sb.output == 1
    assert isinstance(sb.failures, Unset) or sb.failures == 0
    assert sb.attempts[0].worker == "w-partial"
    assert sb.attempts[0].error.class_ == "unservable"
    assert isinstance(sb.attempts[0].started_at, Unset)
    assert sb.attempts[1].worker == "w-full"


def test_kind_options_are_checked() -> None:

    with pytest.raises(ValueError, match="retry applies to task, map and function steps only"):
        cairn.workflow("k", "1").sleep("s", 1, retry=cairn.RetryPolicy(max_attempts=2))
    with pytest.raises(ValueError, match="concurrency applies to task and function steps only"):
        cairn.workflow("k", "1").map("m", "input.items", lambda ctx, x: x, concurrency=cairn.Concurrency(limit=1))
    with pytest.raises(ValueError, match="defined twice"):
        cairn.workflow("k", "1").task("a", lambda ctx, x: x).wait("a", "ev")
    d = (
        cairn.workflow("k", "1", deadline=3600)
        .task("a", lambda ctx, x: x, input={"b": 1, "a": "${input.x}"}, timeout=1.5, at_most_once=True)
        .wait("w", "approved", after=["a"], timeout="24h", when="steps.a.output.ok")
        .sleep("s", 0.25, after=["w"])
        .map("m", "steps.a.output.items", lambda ctx, x: x, after=["a"], max_concurrency=3, tolerated_failures=1)
        .child("c", "other", after=["m"], child_version="2")
        .on_failure("undo", lambda ctx, x: None)
        .definition()
    )
    assert d["deadline"] == "3600000ms"
    assert d["steps"][0] == {
        "id": "a",
        "input": {"a": "${input.x}", "b": 1},
        "timeout": "1500ms",
        "delivery": "at_most_once",
    }
    assert list(d["steps"][0]["input"]) == ["a", "b"], "template keys sorted as Go encodes maps"
    assert d["steps"][1] == {
        "id": "w",
        "kind": "wait",
        "event": "approved",
        "after": ["a"],
        "when": "steps.a.output.ok",
        "wait_timeout": "24h",
    }
    assert d["steps"][2]["duration"] == "250ms"
    assert d["on_failure"] == [{"id": "undo"}]


def test_example_script(server: DevServer) -> None:
    # examples/python/triage.py as a user runs it.
    p = run_example(server, "triage.py")
    assert '"queue": "billing-priority"' in p.stdout, p.stdout
    assert "worker stopped" in p.stderr


def test_sigterm_drains(server: DevServer, tmp_path: Any) -> None:
    import os
    import signal
    import subprocess

    gate = tmp_path / "gate"
    p = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "sigterm_worker.py")],
        env={**os.environ, "CAIRN_SERVER": server.url, "GATE": str(gate)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        c = server.client
        eventually(lambda: any(x.id == "sigterm-worker" and x.alive for x in c.workers()), 15, "the worker registered")
        run = c.start("sigterm-py").run.id
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "running", "the body did not start"
        p.send_signal(signal.SIGTERM)
        # The worker drains: it waits for the running body instead of exiting.
        eventually(
            lambda: any(x.id == "sigterm-worker" for x in c.workers()) and p.poll() is None,
            2,
            "the worker still runs after SIGTERM",
        )
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(0.5)
        gate.touch()
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
    err = p.stderr.read() if p.stderr else ""
    assert "signal received: draining" in err, err[-2000:]
    done = wait_run(c, run)
    assert done.status.value == "completed" and done.output == {"attempt": 1}
    me = [x for x in c.workers() if x.id == "sigterm-worker"]
    assert me and not me[0].alive, me


def test_values_stored_by_reference(server: DevServer) -> None:
    # Values past the server's inline limit (64 KiB) are stored by reference:
    # the worker reads a lease's input and earlier outputs through the lease,
    # the client a run's values, so neither body nor reader sees a reference.
    big = "x" * 100_000

    wf = (
        cairn.workflow("payload-py", "1")
        .task("echo", lambda ctx, x: {"text": x["text"], "n": len(x["text"])})
        .task("size", lambda ctx, x: len(ctx.output("echo")["text"]), after=["echo"])
    )
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log, claim_wait=1).register(wf)):
        run = server.client.start("payload-py", {"text": big}).run.id
        done = wait_run(server.client, run)
    assert done.status.value == "completed", done.error
    assert done.input_ == {"text": big}
    assert step(done, "echo").output == {"text": big, "n": len(big)}
    assert step(done, "size").output == len(big)


def test_a_conflicting_definition_is_refused() -> None:
    """A deployment (cairn serve) keeps definitions immutable: a changed one
    under the same version fails the worker's start with a 409."""
    deployed = start_server(serve=True)
    try:
        log, _ = mem_logger()
        one = cairn.workflow("conflict-py", "1").task("a", lambda ctx, x: 1)
        with serving(cairn.Worker(deployed.client, logger=log, claim_wait=1).register(one)):
            pass
        other = cairn.workflow("conflict-py", "1").task("a", lambda ctx, x: 1).task("b", lambda ctx, x: 2)
        w = cairn.Worker(deployed.client, logger=log, claim_wait=1).register(other)
        with pytest.raises(cairn.CairnError, match="409"):
            w.serve(handle_signals=False)
        assert not w.ready.is_set()
    finally:
        deployed.stop()


def test_an_edited_definition_is_taken_under_cairn_dev(server: DevServer) -> None:
    """Under cairn dev a worker restarted with an edited definition serves it."""
    log, _ = mem_logger()
    one = cairn.workflow("edited-py", "1").task("a", lambda ctx, x: 1)
    with serving(cairn.Worker(server.client, logger=log, claim_wait=1).register(one)):
        pass
    other = cairn.workflow("edited-py", "1").task("a", lambda ctx, x: 1).task("b", lambda ctx, x: 2, after=["a"])
    with serving(cairn.Worker(server.client, logger=log, claim_wait=1).register(other)):
        done = wait_run(server.client, server.client.start("edited-py").run.id, 30)
    assert done.status.value == "completed", done.error
    assert [s.id for s in done.steps] == ["a", "b"]


def test_pause_holds_the_next_step_until_resume(server: DevServer) -> None:
    c = server.client
    began, release = threading.Event(), threading.Event()

    def first(ctx: cairn.StepContext, _: Any) -> int:
        began.set()
        assert release.wait(30), "never released"
        return 1

    wf = cairn.workflow("pause-py", "1").task("first", first).task("second", lambda ctx, _: 2, after=["first"])
    log, _ = mem_logger()
    w = cairn.Worker(c, logger=log, claim_wait=2).register(wf)
    with serving(w):
        run = c.start("pause-py").run.id
        assert began.wait(15), "first never began"
        assert c.pause(run).status.value == "paused"
        assert c.pause(run).status.value == "paused"  # again: nothing changes
        release.set()

        def first_done() -> Any:
            r = c.get(run)
            return r if step(r, "first").status.value == "completed" else None

        r = eventually(first_done, 30, "first completed")
        assert r.status.value == "paused" and step(r, "second").status.value == "pending"
        assert c.resume(run).status.value == "running"
        done = wait_run(c, run)
        assert done.status.value == "completed", done.error
        with pytest.raises(cairn.APIError) as e:
            c.pause(run)
        assert e.value.status == 409


def test_wide_worker_holds_a_claim_per_hundred_slots(server: DevServer) -> None:
    """A worker with more slots than one claim may ask for (100) runs its
    work, and when idle holds a claim per 100 slots (100, 100 and 50), so a
    burst of starts is handed to its slots inside the starts' creates. Its
    claims asked for every free slot, which the server refuses (422), so a
    worker of 101 slots ran nothing; then it held one claim of 100, and the
    rest of a burst waited as backlog, each paying a lease write."""
    import httpx

    c = server.client
    wf = cairn.workflow("wide-py", "1").task("a", lambda ctx, _: 1)
    w = cairn.Worker(c, name="py-wide", concurrency=250, claim_wait=5).register(wf)
    with serving(w):
        deadline = time.monotonic() + 10
        while True:
            held = httpx.get(f"{server.url}/v1/api/healthz").json()["held_claims"]
            if held >= 3:
                break
            assert time.monotonic() < deadline, f"an idle worker of 250 slots: the server holds {held} of its claims after 10 s, not 3"
            time.sleep(0.02)
        ids = [c.start("wide-py", {}).run.id for _ in range(3)]
        for run in ids:
            assert wait_run(c, run, 20).status.value == "completed"

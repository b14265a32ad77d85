"""Durable functions on the asyncio worker against a real cairn dev: steps
run once across a suspension, a lost lease, nondeterminism and patched,
step errors, waits, invokes, map and parallel."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from conftest import (
    DevServer,
    DropHeartbeats,
    function_ops,
    mem_logger,
    run_example,
    serving,
    step,
    use_transport,
    wait_run,
    wait_suspended,
)

import cairn
from cairn._api.types import Unset
from cairn.function import INLINE_SLEEP


def _outcomes(run: Any) -> list[str]:
    return [a.outcome.value for a in step(run, "main").attempts]


def _worker(server: DevServer, *wfs: cairn.Workflow, name: str | None = None) -> cairn.Worker:
    log, _ = mem_logger()
    return cairn.Worker(server.client, logger=log, claim_wait=1, name=name).register(*wfs)


def _marker(ran: Counter[str]) -> Callable[[str], Callable[[], str]]:
    """mark(what) is a step body that counts its runs in ran[what] and returns what."""

    def mark(what: str) -> Callable[[], str]:
        def fn() -> str:
            ran[what] += 1
            return what

        return fn

    return mark


def _drained_then_resumed(server: DevServer, wf: cairn.Workflow, began: threading.Event) -> Any:
    """Starts wf's run on a worker that drains (0.2 s) once its charge step
    began, then serves it on a fresh worker: the run completes with the
    charge step's result, recorded. Returns the ended run."""
    c = server.client
    log, _ = mem_logger()
    w = cairn.Worker(c, logger=log, claim_wait=1, drain_timeout=0.2).register(wf)
    with serving(w):
        run = c.start(wf.name).run.id
        assert began.wait(10), "the step did not begin"
    with serving(_worker(server, wf)):
        done = wait_run(c, run, 20)
    assert done.status.value == "completed" and done.output == "charged", (done.status, done.output, function_ops(done))
    assert "/charge#0 step completed" in function_ops(done)
    return done


def test_steps_run_once_across_a_suspension(server: DevServer) -> None:
    ran: Counter[str] = Counter()
    seen: list[tuple[str, str, float]] = []

    def charge(n: int) -> dict[str, Any]:
        ran["charge"] += 1
        return {"n": n * 2}

    async def ship() -> str:
        ran["ship"] += 1
        return "shipped"

    async def body(fc: cairn.Durable, inp: dict[str, Any]) -> dict[str, Any]:
        vals = (fc.uuid(), fc.now().isoformat(), fc.random())
        seen.append(vals)
        c = await fc.step("charge", lambda: charge(inp["n"]))
        await fc.sleep("nap", 2.5)  # suspends: a second attempt replays
        s = await fc.step("ship", ship)
        await fc.sleep("short", 0.05)  # waited out in the attempt
        return {"charge": c, "ship": s, "id": vals[0]}

    wf = cairn.function("fn-once-py", "1", body)
    assert wf.definition()["steps"] == [{"id": "main", "kind": "function", "retry": {"max_attempts": 1}}]
    with serving(_worker(server, wf)):
        run = server.client.start("fn-once-py", {"n": 21}).run.id
        done = wait_run(server.client, run, 30)
    assert done.status.value == "completed", done.error
    assert done.output["charge"] == {"n": 42} and done.output["ship"] == "shipped"
    assert ran == {"charge": 1, "ship": 1}
    assert len(seen) == 2 and seen[0] == seen[1], seen  # the values replayed
    assert done.output["id"] == seen[0][0]
    assert _outcomes(done) == ["suspended", "completed"]
    assert function_ops(done) == [
        "/uuid#0 value completed",
        "/now#0 value completed",
        "/random#0 value completed",
        "/charge#0 step completed",
        "/nap#0 sleep completed",
        "/ship#0 step completed",
        "/short#0 sleep completed",
    ]
    a = step(done, "main").attempts
    assert (a[1].claimed_at - a[0].claimed_at).total_seconds() >= 2.4


def test_usage_survives_a_suspension(server: DevServer) -> None:
    """What an attempt consumed before it suspended counts: the suspending
    checkpoint carries its usage, as a complete does."""
    from opentelemetry.sdk.trace import TracerProvider

    tp = TracerProvider()

    def ask() -> int:
        with tp.get_tracer("test").start_as_current_span("chat", attributes={"gen_ai.request.model": "m1"}) as s:
            s.set_attribute("gen_ai.usage.input_tokens", 30)
            s.set_attribute("gen_ai.usage.output_tokens", 7)
        return 1

    async def body(fc: cairn.Durable, _: Any) -> int:
        n: int = await fc.step("ask", ask)
        await fc.sleep("nap", INLINE_SLEEP + 0.5)  # suspends; the next attempt ends the run
        return n

    log, _ = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=1, tracer_provider=tp).register(cairn.function("usage-nap-py", "1", body))
    with serving(w):
        done = wait_run(server.client, server.client.start("usage-nap-py").run.id, 30)
    assert done.status.value == "completed", done.error
    assert _outcomes(done) == ["suspended", "completed"]
    u = step(done, "main").usage
    assert (u.input_tokens, u.output_tokens, u.model) == (30, 7, "m1"), u
    first = step(done, "main").attempts[0].usage
    assert not isinstance(first, Unset) and first.input_tokens == 30, first


def test_resume_after_the_lease_is_lost_and_at_most_once(server: DevServer, monkeypatch: Any) -> None:
    # The first attempt's heartbeats are dropped while its at_most_once step
    # runs: its lease expires, the engine offers the driver again, and the
    # new attempt replays. The step that completed is not run again; the
    # at_most_once one, started without an outcome, is not either (class
    # lost); the fenced driver records nothing.
    transport = DropHeartbeats()
    use_transport(monkeypatch, transport)
    ran: Counter[str] = Counter()
    cancelled = threading.Event()

    def one() -> int:
        ran["one"] += 1
        return 1

    def pay_blocks() -> str:
        ran["pay"] += 1
        transport.drop.set()
        # A plain step runs on a thread: it outlives the lease, and its result is dropped.
        assert cancelled.wait(20), "the first attempt was not cancelled"
        transport.drop.clear()
        return "paid"

    async def body(fc: cairn.Durable, _: Any) -> dict[str, Any]:
        await fc.step("one", one)
        try:
            await fc.step("pay", pay_blocks, at_most_once=True)
            pay = "ran"
        except cairn.StepError as e:
            pay = f"{e.cls}: {e.message}"
        after = await fc.step("after", lambda: fc.info.attempt)
        return {"pay": pay, "after": after}

    async def watch(fc: cairn.Durable, inp: Any) -> Any:
        if fc.info.attempt > 1:
            transport.drop.clear()  # the first attempt learns it was fenced
        try:
            return await body(fc, inp)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    wf = cairn.function("fn-lost-py", "1", watch)
    with serving(_worker(server, wf)):
        run = server.client.start("fn-lost-py").run.id
        done = wait_run(server.client, run, 30)
    assert done.status.value == "completed", done.error
    assert ran == {"one": 1, "pay": 1}
    assert done.output == {
        "pay": "lost: at_most_once step /pay#0 started in an earlier attempt without recording an outcome: "
        "it is not run again",
        "after": 2,
    }
    assert function_ops(done) == [
        "/one#0 step completed",
        "/pay#0 step started",
        "/pay#0 step failed",
        "/after#0 step completed",
    ]
    assert _outcomes(done)[-1] == "completed" and len(_outcomes(done)) == 2


def test_nondeterminism_and_patched(server: DevServer) -> None:
    ran: Counter[str] = Counter()

    mark = _marker(ran)

    async def v1(fc: cairn.Durable, _: Any) -> str:
        await fc.step("a", mark("a"))
        await fc.sleep("nap", 2.5)
        return str(await fc.step("b", mark("b")))

    async def v2(fc: cairn.Durable, inp: dict[str, Any]) -> str:
        if inp["mode"] == "break":
            await fc.sleep("a", 0.01)  # was a step: the history says otherwise
        else:
            if fc.patched("extra"):
                await fc.step("extra", mark("extra"))
            await fc.step("a", mark("a"))
        await fc.sleep("nap", 2.5)
        return str(await fc.step("b", mark("b")))

    c = server.client
    with serving(_worker(server, cairn.function("fn-det-py", "1", v1))):
        old = c.start("fn-det-py", {"mode": "patch"}).run.id
        broken = c.start("fn-det-py", {"mode": "break"}).run.id
        wait_suspended(c, old, 1)
        wait_suspended(c, broken, 1)
    assert ran == {"a": 2}
    # The code changes under the same version.
    with serving(_worker(server, cairn.function("fn-det-py", "1", v2))):
        new = c.start("fn-det-py", {"mode": "patch"}).run.id
        r_old, r_broken, r_new = (wait_run(c, r, 30) for r in (old, broken, new))
    assert r_broken.status.value == "failed"
    assert r_broken.error.class_ == "nondeterminism", r_broken.error
    assert r_broken.error.message == (
        f'nondeterminism in run {broken}: replay reached sleep "/a#0" where the history records step "/a#0" '
        "(seq 0); the code changed under a run in flight: gate changes with Patched (docs/FUNCTIONS.md)"
    )
    # A run the old code recorded takes the old path; a new run the new one.
    assert r_old.status.value == "completed", r_old.error
    assert "/patch:extra#0 patch completed" not in function_ops(r_old)
    assert r_new.status.value == "completed", r_new.error
    assert function_ops(r_new)[:2] == ["/patch:extra#0 patch completed", "/extra#0 step completed"]
    assert ran == {"a": 3, "b": 2, "extra": 1}


def test_step_errors_by_class(server: DevServer) -> None:
    tries: Counter[str] = Counter()

    async def flaky() -> int:
        tries["flaky"] += 1
        if tries["flaky"] < 3:
            raise cairn.retryable("not yet")
        return tries["flaky"]

    def declined() -> None:
        tries["declined"] += 1
        raise cairn.failure("card_declined", "the card was declined")

    def boom() -> None:
        tries["boom"] += 1
        raise ValueError("a bug")

    fast = cairn.RetryPolicy(max_attempts=5, initial_backoff=0.02, non_retryable=["card_declined"])

    async def body(fc: cairn.Durable, _: Any) -> None:
        n = await fc.step("flaky", flaky, retry=fast)
        assert n == 3
        try:
            await fc.step("declined", declined, retry=fast)
        except cairn.StepError as e:
            assert (e.cls, e.message) == ("card_declined", "the card was declined")
        try:
            await fc.step("boom", boom, retry=fast)  # fatal: not retried
        except cairn.StepError as e:
            assert e.cls == "fatal" and "a bug" in e.message
        await fc.step("slow", _slow, timeout=0.1, retry=cairn.RetryPolicy(max_attempts=1))

    with serving(_worker(server, cairn.function("fn-err-py", "1", body))):
        run = server.client.start("fn-err-py").run.id
        done = wait_run(server.client, run, 30)
    assert tries == {"flaky": 3, "declined": 1, "boom": 1}
    assert done.status.value == "failed"
    assert done.error.class_ == "timeout", done.error
    assert "/slow#0" in done.error.message
    assert function_ops(done) == [
        "/flaky#0 step completed",
        "/declined#0 step failed",
        "/boom#0 step failed",
        "/slow#0 step failed",
    ]
    assert _outcomes(done) == ["failed"]  # a function is not retried by default


async def _slow() -> None:
    await asyncio.sleep(10)


async def _class_of(op: Awaitable[Any], ok: str) -> str:
    """The class of the StepError the durable operation op raised; ok when it returned."""
    try:
        await op
    except cairn.StepError as e:
        return e.cls
    return ok


def test_wait_for_event_payload_and_timeout(server: DevServer) -> None:
    async def body(fc: cairn.Durable, _: Any) -> dict[str, Any]:
        ok = await fc.wait_for_event("approval", "approve", timeout=60)
        late = await _class_of(fc.wait_for_event("late", "never", timeout=2.5), "came")
        return {"ok": ok, "late": late}

    c = server.client
    with serving(_worker(server, cairn.function("fn-wait-py", "1", body))):
        run = c.start("fn-wait-py").run.id
        wait_suspended(c, run, 1)
        c.send_event(run, "approve", {"by": "ann"})
        done = wait_run(c, run, 30)
    assert done.status.value == "completed", done.error
    assert done.output == {"ok": {"by": "ann"}, "late": "timeout"}
    assert function_ops(done) == [
        "/approval#0 wait started",
        "/approval#0 wait completed",
        "/late#0 wait started",
        "/late#0 wait failed",
    ]


def test_invoke_a_dag(server: DevServer) -> None:
    dag = (
        cairn.workflow("fn-bill-py", "1")
        .task("price", lambda ctx, x: {"total": x["qty"] * 3})
        .task(
            "invoice", lambda ctx, x: {"invoice": f"INV-{x['total']}"}, after=["price"], input="${steps.price.output}"
        )
    )
    failing = cairn.workflow("fn-fail-py", "1").task("x", _refuse, retry=cairn.RetryPolicy(max_attempts=1))

    async def body(fc: cairn.Durable, inp: dict[str, Any]) -> dict[str, Any]:
        inv = await fc.invoke("bill", "fn-bill-py", {"qty": inp["qty"]})
        bad = await _class_of(fc.invoke("bad", "fn-fail-py", None, version="1"), "ok")
        return {"inv": inv, "bad": bad}

    with serving(_worker(server, dag, failing, cairn.function("fn-invoke-py", "1", body))):
        run = server.client.start("fn-invoke-py", {"qty": 7}).run.id
        done = wait_run(server.client, run, 30)
    assert done.status.value == "completed", done.error
    assert done.output == {"inv": {"invoice": "INV-21"}, "bad": "out_of_stock"}
    assert function_ops(done) == [
        "/bill#0 invoke started",
        "/bill#0 invoke completed",
        "/bad#0 invoke started",
        "/bad#0 invoke failed",
    ]


def _refuse(ctx: cairn.StepContext, _: Any) -> None:
    raise cairn.failure("out_of_stock", "none left")


def test_map_and_parallel(server: DevServer) -> None:
    ran: Counter[str] = Counter()
    live, most = [0], [0]

    async def item(fc: cairn.Durable, x: int) -> int:
        async def square() -> int:
            ran[f"sq{x}"] += 1
            live[0] += 1
            most[0] = max(most[0], live[0])
            await asyncio.sleep(0.05)
            live[0] -= 1
            return x * x

        v = await fc.step("square", square)
        if x % 2:
            await fc.sleep("rest", 2.5)  # parks until no branch runs, then one suspension
        return v + int(await fc.step("one", lambda: 1))

    async def body(fc: cairn.Durable, _: Any) -> dict[str, Any]:
        squares = await fc.map("sq", [1, 2, 3, 4], item, limit=2)
        pair = await fc.parallel("pair", lambda b: b.step("l", lambda: "left"), lambda b: b.step("r", lambda: "right"))
        return {"squares": squares, "pair": pair}

    with serving(_worker(server, cairn.function("fn-map-py", "1", body))):
        run = server.client.start("fn-map-py").run.id
        done = wait_run(server.client, run, 30)
    assert done.status.value == "completed", done.error
    assert done.output == {"squares": [2, 5, 10, 17], "pair": ["left", "right"]}
    assert ran == {"sq1": 1, "sq2": 1, "sq3": 1, "sq4": 1}
    assert most[0] <= 2
    assert _outcomes(done) == ["suspended", "completed"]  # the two sleeps: one suspension
    ops = set(function_ops(done))
    for i in range(4):
        assert f"/sq#0/{i}/square#0 step completed" in ops
        assert f"/sq#0/{i}/one#0 step completed" in ops
    assert {"/sq#0/0/rest#0 sleep completed", "/sq#0/2/rest#0 sleep completed"} <= ops
    assert {"/pair#0/0/l#0 step completed", "/pair#0/1/r#0 step completed"} <= ops


def test_triage_function_example(server: DevServer) -> None:
    # examples/python/triage_function.py as a user runs it: it serves, starts
    # a ticket, prints the reply and stops; the steps are triage.py's.
    p = run_example(server, "triage_function.py")
    assert '"queue": "billing-priority"' in p.stdout, p.stdout
    assert "expect an answer within 4 hours" in p.stdout, p.stdout
    run = p.stdout.split()[1]
    done = server.client.get(run)
    assert function_ops(done) == [
        "/classify#0 step completed",
        "/lookup_customer#0 step completed",
        "/draft_reply#0 step completed",
    ]


def test_nested_map_under_a_limit_suspends(server: DevServer) -> None:
    # Items of a map under a limit that park inside a nested parallel do not
    # hold the barrier: an item waiting for a slot is not running, so the
    # function suspends once every started item parks.
    async def item(fc: cairn.Durable, x: int) -> int:
        await fc.parallel("inner", lambda b: b.sleep("nap", 2.5))
        return x

    async def body(fc: cairn.Durable, _: Any) -> int:
        return len(await fc.map("outer", [0, 1], item, limit=1))

    with serving(_worker(server, cairn.function("fn-nested-py", "1", body))):
        run = server.client.start("fn-nested-py").run.id
        done = wait_run(server.client, run, 20)
    assert done.status.value == "completed", done.error
    assert done.output == 2
    assert _outcomes(done)[-1] == "completed" and "suspended" in _outcomes(done)


def test_wait_gets_a_large_event_payload(server: DevServer) -> None:
    # An event payload stored by reference (over the inline size) reaches
    # wait_for_event as its value.
    big = "x" * (100 << 10)

    async def body(fc: cairn.Durable, _: Any) -> int:
        v = await fc.wait_for_event("w", "go", timeout=60)
        assert isinstance(v, str), f"not the payload: {str(v)[:120]}"
        return len(v)

    c = server.client
    with serving(_worker(server, cairn.function("fn-bigev-py", "1", body))):
        run = c.start("fn-bigev-py").run.id
        wait_suspended(c, run, 1)
        c.send_event(run, "go", big)
        done = wait_run(c, run, 20)
    assert done.status.value == "completed", done.error
    assert done.output == len(big)


def test_drain_keeps_a_finished_steps_result(server: DevServer) -> None:
    # A step that finishes after the drain cut its function off keeps its
    # result: the suspension's checkpoint carries it, and the at_most_once
    # step is not failed as lost on the next attempt.
    began = threading.Event()
    runs: Counter[str] = Counter()

    def body_of(fc: cairn.Durable) -> Any:
        async def charge() -> str:
            runs["charge"] += 1
            if fc.info.attempt == 1:
                began.set()
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    await asyncio.sleep(0.05)  # it finishes its side effect anyway
            return "charged"

        return charge

    async def body(fc: cairn.Durable, _: Any) -> str:
        return await fc.step("charge", body_of(fc), at_most_once=True)

    _drained_then_resumed(server, cairn.function("fn-drained-py", "1", body), began)
    assert runs["charge"] == 1


def test_at_most_once_outcome_is_checkpointed_at_once(server: DevServer) -> None:
    # An at_most_once step's outcome is recorded before the body goes on (no
    # batching): a step after it sees it in the run's history.
    seen: list[list[str]] = []

    async def body(fc: cairn.Durable, _: Any) -> str:
        await fc.step("charge", lambda: "charged", at_most_once=True)
        run = await asyncio.to_thread(server.client.get, fc.info.run)
        seen.append(function_ops(run))
        return "ok"

    with serving(_worker(server, cairn.function("fn-amo-py", "1", body))):
        run = server.client.start("fn-amo-py").run.id
        done = wait_run(server.client, run, 20)
    assert done.status.value == "completed", done.error
    assert seen and seen[0] == ["/charge#0 step started", "/charge#0 step completed"], seen


def test_race(server: DevServer) -> None:
    # race returns the branch that ends first and records it: a step against
    # a sleep ends at once; a wait against a sleep suspends the function
    # until the first of them (the event, or the sleep's end), and a replay
    # runs only the winner.
    async def napping(fc: cairn.Durable) -> str:
        await fc.sleep("nap", 3)
        return "slept"

    async def body(fc: cairn.Durable, inp: dict[str, Any]) -> str:
        if inp.get("quick"):
            _, v = await fc.race("quick", lambda b: b.step("fast", lambda: "fast"), napping)
            return str(v)

        async def approval(b: cairn.Durable) -> Any:
            return await b.wait_for_event("ok", "approve")

        i, v = await fc.race("approval", approval, napping)
        return f"{i} {json.dumps(v)}"

    c = server.client
    with serving(_worker(server, cairn.function("fn-race-py", "1", body))):
        quick = c.start("fn-race-py", {"quick": True}).run.id
        approved = c.start("fn-race-py", {}).run.id
        timed_out = c.start("fn-race-py", {}).run.id
        q = wait_run(c, quick, 20)
        assert q.output == "fast" and _outcomes(q) == ["completed"], (q.output, q.error, _outcomes(q))
        wait_suspended(c, approved, 1)
        c.send_event(approved, "approve", "yes")
        a = wait_run(c, approved, 20)
        assert a.output == '0 "yes"', (a.output, a.error)
        t = wait_run(c, timed_out, 20)
    assert t.output == '1 "slept"', (t.output, t.error)
    winner = [op.result for op in step(t, "main").operations if op.id == "/approval#0"]
    assert winner == [1], function_ops(t)


def test_large_results_replay(server: DevServer) -> None:
    # Results too large for the run record (a step's, an invoked run's
    # output) are stored by reference and reach the replay as their values.
    big = "y" * (100 << 10)
    bodies: Counter[str] = Counter()

    async def child(fc: cairn.Durable, _: Any) -> str:
        return big

    async def body(fc: cairn.Durable, _: Any) -> int:
        bodies["main"] += 1
        s = await fc.step("make", lambda: big)
        c = await fc.invoke("child", "fn-bigchild-py")
        await fc.sleep("nap", INLINE_SLEEP + 1)
        if s != big or c != big:
            raise cairn.fatal(f"replayed {len(s)} and {len(c)} bytes, want {len(big)}")
        return len(s) + len(c)

    wfs = (cairn.function("fn-bigres-py", "1", body), cairn.function("fn-bigchild-py", "1", child))
    with serving(_worker(server, *wfs)):
        run = server.client.start("fn-bigres-py").run.id
        done = wait_run(server.client, run, 30)
    assert done.status.value == "completed", done.error
    assert done.output == 2 * len(big)
    assert bodies["main"] >= 3, "the body ran fewer times than a replay after the invoke and after the sleep"


def test_a_long_step_backoff_suspends_the_function(server: DevServer) -> None:
    # A step's backoff longer than an inline sleep suspends the function:
    # the backoff is recorded (<step>.retry#<n>, the failures so far), the
    # next attempt tries again after it, and a replay past the completed
    # step finds its backoffs reached.
    tries: Counter[str] = Counter()

    def flaky() -> int:
        tries["flaky"] += 1
        if tries["flaky"] < 3:
            raise cairn.retryable("not yet")
        return 7

    policy = cairn.RetryPolicy(max_attempts=3, initial_backoff=INLINE_SLEEP + 1, multiplier=1)

    async def body(fc: cairn.Durable, _: Any) -> int:
        n = await fc.step("flaky", flaky, retry=policy)
        await fc.sleep("after", INLINE_SLEEP + 1)  # one more replay, past the step
        return n

    with serving(_worker(server, cairn.function("fn-backoff-py", "1", body))):
        run = server.client.start("fn-backoff-py").run.id
        done = wait_run(server.client, run, 60)
    assert done.status.value == "completed", done.error
    assert done.output == 7 and tries["flaky"] == 3
    assert _outcomes(done) == ["suspended", "suspended", "suspended", "completed"]
    ops = step(done, "main").operations
    assert function_ops(done) == [
        "/flaky#0.retry#0 sleep completed",
        "/flaky#0.retry#1 sleep completed",
        "/flaky#0 step completed",
        "/after#0 sleep completed",
    ]
    assert ops[0].result == {"failures": 1} and ops[1].result == {"failures": 2}


def test_continue_as_new(server: DevServer) -> None:
    # A counter that continues as new 3 times, then returns: each run of the
    # chain holds one step, the first three complete with {"continued_as":
    # <next>}, and the clients' wait and result follow the chain to the
    # last run's output.
    async def body(fc: cairn.Durable, inp: dict[str, int]) -> int:
        n = int(await fc.step("fetch", lambda: inp["n"] + 1))
        if n >= 4:
            return n * 10
        raise cairn.ContinueAsNew({"n": n})

    def plain(fc: cairn.SyncDurable, inp: dict[str, int]) -> int:
        n = int(fc.step("fetch", lambda: inp["n"] + 1))
        if n >= 4:
            return n * 10
        raise cairn.ContinueAsNew({"n": n})

    c = server.client
    wfs = (cairn.function("fn-counter-py", "1", body), cairn.function("fn-counter-def-py", "1", plain))
    with serving(_worker(server, *wfs)):
        first = c.start("fn-counter-py", {"n": 0}).run.id
        last = c.wait(first)
        assert c.result(first) == 40
        assert c.result(c.start("fn-counter-def-py", {"n": 1}).run.id) == 40  # a plain def body

        async def via_async() -> tuple[Any, Any]:
            async with cairn.AsyncClient(server.url) as ac:
                return (await ac.wait(first)).id, await ac.result(first)

        assert asyncio.run(via_async()) == (last.id, 40)
    assert last.status.value == "completed", last.error
    assert last.output == 40 and last.id != first
    assert isinstance(last.continued_as, Unset)
    chain = [last.id]
    prev = last.continued_from
    while not isinstance(prev, Unset):
        r = c.get(prev)
        assert r.status.value == "completed", r.error
        assert r.continued_as == chain[0] and r.output == {"continued_as": chain[0]}
        assert function_ops(r) == ["/fetch#0 step completed"]
        chain.insert(0, r.id)
        prev = r.continued_from
    assert chain[0] == first and len(chain) == 4
    assert [step(c.get(r), "main").operations[0].result for r in chain] == [1, 2, 3, 4]


def test_a_plain_def_body(server: DevServer) -> None:
    # A triage-like function as a plain def: its operations block. Steps
    # run once across the suspensions (a long sleep, an event wait, an
    # invoke); map, parallel and race take plain branches; the records are
    # the async form's.
    ran: Counter[str] = Counter()
    threads: set[str] = set()

    def classify(t: dict[str, str]) -> dict[str, str]:
        ran["classify"] += 1
        return {"category": "billing" if "refund" in t["body"] else "other"}

    async def lookup() -> dict[str, str]:
        ran["lookup"] += 1
        return {"tier": "gold"}

    dag = cairn.workflow("fn-sync-route-py", "1").task("route", lambda ctx, x: {"queue": f"{x['category']}-q"})

    def item(fc: cairn.SyncDurable, x: int) -> int:
        return int(fc.step("sq", lambda: x * x))

    def body(fc: cairn.SyncDurable, t: dict[str, str]) -> dict[str, Any]:
        threads.add(threading.current_thread().name)
        uid = fc.uuid()
        c = fc.step("classify", lambda: classify(t))
        customer = fc.step("lookup", lookup)
        fc.sleep("cool-off", INLINE_SLEEP + 0.5)  # suspends
        fc.sleep("short", 0.05)  # waited out in the attempt
        ok = fc.wait_for_event("approval", "approve", timeout=60)
        route = fc.invoke("route", "fn-sync-route-py", c)
        squares = fc.map("sq", [1, 2, 3], item, limit=2)
        pair = fc.parallel("pair", lambda b: b.step("l", lambda: "left"), lambda b: b.step("r", lambda: "right"))
        won = fc.race("first", lambda b: b.step("fast", lambda: "fast"), lambda b: b.sleep("slow", 60))
        return {"c": c, "customer": customer, "ok": ok, "route": route, "squares": squares, "pair": pair,
                "won": list(won), "id": uid, "patched": fc.patched("x")}  # fmt: skip

    wf = cairn.function("fn-sync-py", "1", body)
    c = server.client
    with serving(_worker(server, wf, dag)):
        run = c.start("fn-sync-py", {"body": "a refund please"}).run.id
        wait_suspended(c, run, 2)  # the sleep, then the wait
        c.send_event(run, "approve", {"by": "ann"})
        done = wait_run(c, run, 40)
    assert done.status.value == "completed", done.error
    out = done.output
    assert out["c"] == {"category": "billing"} and out["customer"] == {"tier": "gold"}
    assert out["ok"] == {"by": "ann"} and out["route"] == {"queue": "billing-q"}
    assert out["squares"] == [1, 4, 9] and out["pair"] == ["left", "right"] and out["won"] == [0, "fast"]
    assert out["patched"] is True
    assert ran == {"classify": 1, "lookup": 1}
    assert threads == {"cairn-function"}  # a thread of its own, not the loop's
    assert _outcomes(done) == ["suspended", "suspended", "suspended", "completed"]  # sleep, wait, invoke
    ops = function_ops(done)
    assert ops[:9] == [
        "/uuid#0 value completed",
        "/classify#0 step completed",
        "/lookup#0 step completed",
        "/cool-off#0 sleep completed",
        "/short#0 sleep completed",
        "/approval#0 wait started",
        "/approval#0 wait completed",
        "/route#0 invoke started",
        "/route#0 invoke completed",
    ]
    assert {f"/sq#0/{i}/sq#0 step completed" for i in range(3)} <= set(ops)
    assert {"/pair#0/0/l#0 step completed", "/pair#0/1/r#0 step completed"} <= set(ops)
    assert {"/first#0 value completed", "/first#0/0/fast#0 step completed"} <= set(ops)
    assert ops[-1] == "/patch:x#0 patch completed"
    assert out["id"] == step(done, "main").operations[0].result


def test_plain_and_async_bodies_replay_each_other(server: DevServer) -> None:
    # A history a plain def body recorded replays in an async def body of
    # the same shape under the same version, and the other way round: the
    # worker is replaced (the code changes) while the runs are suspended.
    ran: Counter[str] = Counter()

    mark = _marker(ran)

    def plain(fc: cairn.SyncDurable, _: Any) -> dict[str, Any]:
        a = fc.step("a", mark("a"))
        v = fc.random()
        sq = fc.map("m", [1, 2], lambda b, x: b.step("s", lambda: x * 10))
        fc.sleep("nap", INLINE_SLEEP + 0.5)
        return {"a": a, "v": v, "sq": sq, "b": fc.step("b", mark("b")), "form": "def"}

    async def asynchronous(fc: cairn.Durable, _: Any) -> dict[str, Any]:
        a = await fc.step("a", mark("a"))
        v = fc.random()

        async def each(b: cairn.Durable, x: int) -> Any:
            return await b.step("s", lambda: x * 10)

        sq = await fc.map("m", [1, 2], each)
        await fc.sleep("nap", INLINE_SLEEP + 0.5)
        return {"a": a, "v": v, "sq": sq, "b": await fc.step("b", mark("b")), "form": "async"}

    c = server.client
    first = _worker(server, cairn.function("fn-x1-py", "1", plain), cairn.function("fn-x2-py", "1", asynchronous))
    with serving(first):
        r1 = c.start("fn-x1-py").run.id
        r2 = c.start("fn-x2-py").run.id
        wait_suspended(c, r1, 1)
        wait_suspended(c, r2, 1)
    assert ran == {"a": 2}
    second = _worker(server, cairn.function("fn-x1-py", "1", asynchronous), cairn.function("fn-x2-py", "1", plain))
    with serving(second):
        d1, d2 = wait_run(c, r1, 30), wait_run(c, r2, 30)
    for d, form in ((d1, "async"), (d2, "def")):
        assert d.status.value == "completed", d.error
        assert d.output["form"] == form and d.output["a"] == "a" and d.output["b"] == "b"
        assert d.output["sq"] == [10, 20]
        assert d.output["v"] == step(d, "main").operations[1].result  # the recorded value
        assert _outcomes(d) == ["suspended", "completed"]
        assert function_ops(d) == [
            "/a#0 step completed",
            "/random#0 value completed",
            "/m#0/0/s#0 step completed",
            "/m#0/1/s#0 step completed",
            "/nap#0 sleep completed",
            "/b#0 step completed",
        ]
    assert ran == {"a": 2, "b": 2}  # no step ran again on replay


def test_drain_keeps_a_plain_bodys_step_result(server: DevServer) -> None:
    # The drain cuts a plain def body off while its step runs on a thread:
    # the step's result is still recorded, and the next attempt replays it.
    began = threading.Event()
    runs: Counter[str] = Counter()

    def body(fc: cairn.SyncDurable, _: Any) -> str:
        def charge() -> str:
            runs["charge"] += 1
            if fc.info.attempt == 1:
                began.set()
                time.sleep(0.8)  # past the drain timeout
            return "charged"

        return str(fc.step("charge", charge, at_most_once=True))

    done = _drained_then_resumed(server, cairn.function("fn-sync-drained-py", "1", body), began)
    assert runs["charge"] == 1
    assert _outcomes(done) == ["suspended", "completed"]

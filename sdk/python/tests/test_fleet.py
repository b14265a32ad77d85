"""A mixed fleet: a Go, a TypeScript and a Python worker serve steps of one
run. The Go worker is bench/e2e's ($CAIRN_GO_BENCH_WORKER, built by make
py-test), the TypeScript one tests/fleet/tsworker.mjs on the TypeScript SDK's
build ($CAIRN_TS_SDK); all three register the same definition (bench/e2e's
fan-out of 200 no-op steps), each with one slot. Also: the TypeScript SDK's
Go worker ($CAIRN_GO_WORKER) and this SDK serve different steps of one run,
and the attempts of its durable function "mixed-fn" alternate between it and
this SDK, each replaying the history the other recorded."""

from __future__ import annotations

import os
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    DevServer,
    function_ops,
    mem_logger,
    serving,
    start_server,
    step,
    stop_process,
    wait_run,
    wait_suspended,
)

import cairn

HERE = Path(__file__).parent


def _env(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        pytest.fail(f"{name} is not set: run the tests with make py-test")
    return v


class _Proc:
    """A worker process that prints "ready" once registered."""

    def __init__(self, args: list[str], env: dict[str, str], what: str) -> None:
        self.what = what
        self.p = subprocess.Popen(
            args, env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.ready = threading.Event()
        self.err: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.p.stderr or []), daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            if b"ready" in line:
                self.ready.set()

    def wait_ready(self, timeout: float) -> None:
        if not self.ready.wait(timeout):
            self.stop()
            raise AssertionError(
                f"the {self.what} did not say ready within {timeout}s (exit {self.p.poll()}):\n"
                + b"".join(self.err).decode(errors="replace")[-2000:]
            )

    def stop(self) -> None:
        stop_process(self.p, 30)


def test_go_typescript_and_python_workers_serve_one_run(server: DevServer) -> None:
    go = _Proc(
        [_env("CAIRN_GO_BENCH_WORKER")],
        {"CAIRN_E2E_BENCH_WORKER": server.url, "CAIRN_E2E_BENCH_SLOTS": "1"},
        "Go worker",
    )
    ts = _Proc(
        ["node", str(HERE / "fleet" / "tsworker.mjs")],
        {"CAIRN_SERVER": server.url, "CAIRN_TS_SDK": _env("CAIRN_TS_SDK")},
        "TypeScript worker",
    )
    try:
        go.wait_ready(30)
        ts.wait_ready(30)
        wf = cairn.workflow("e2e-fanout200", "1")
        for i in range(200):
            wf.task(f"p{i:03d}", lambda ctx, _: {})
        log, _ = mem_logger()
        w = cairn.Worker(server.client, name="py-worker", logger=log, concurrency=1, claim_wait=1).register(wf)
        with serving(w):
            run = server.client.start("e2e-fanout200").run.id
            done = wait_run(server.client, run, 90)
    finally:
        ts.stop()
        go.stop()
    assert done.status.value == "completed", done.error
    by: Counter[str] = Counter()
    for s in done.steps:
        assert s.status.value == "completed", (s.id, s.status)
        winners = [a.worker for a in s.attempts if a.outcome.value == "completed"]
        assert len(winners) == 1, (s.id, winners)
        by[winners[0]] += 1
    assert sum(by.values()) == 200
    print(f"steps by worker: {dict(by)}")
    assert {"e2e-bench", "ts-worker", "py-worker"} <= set(by), f"steps by worker: {dict(by)}"


def test_go_and_python_workers_serve_different_steps(server: DevServer) -> None:
    go = _Proc([_env("CAIRN_GO_WORKER")], {"CAIRN_SERVER": server.url}, "Go worker")
    try:
        go.wait_ready(30)
        # The same definition as the Go worker's; a is served there (refused
        # here as unservable), b here (the Go worker refuses it).
        wf = (
            cairn.workflow("mixed", "1")
            .remote_task("a")
            .task(
                "b",
                lambda ctx, x: {"from": x, "by": "python", "worker": ctx.info.worker},
                after=["a"],
                input="${steps.a.output}",
            )
        )
        log, _ = mem_logger()
        with serving(cairn.Worker(server.client, name="py-worker", logger=log, claim_wait=1).register(wf)):
            run = server.client.start("mixed", {"n": 21}).run.id
            done: Any = wait_run(server.client, run, 60)
    finally:
        go.stop()
    assert done.status.value == "completed", done.error
    assert done.output == {"from": {"by": "go", "n": 42}, "by": "python", "worker": "py-worker"}

    def completed_by(id: str) -> str:
        return next(a.worker for a in step(done, id).attempts if a.outcome.value == "completed")

    assert completed_by("a") == "go-worker"
    assert completed_by("b") == "py-worker"


def _mixed_function(seen: list[tuple[str, str, float, Any]], ran: Counter[str], nap: float) -> cairn.Workflow:
    """The Go worker's function "mixed-fn" (sdk/ts/test/goworker), operation
    for operation; its steps say which language ran them. Its naps last nap
    seconds (the Go worker's, $CAIRN_MIXED_NAP)."""

    def by() -> dict[str, str]:
        ran["py"] += 1
        return {"by": "py"}

    async def body(fc: cairn.Durable, inp: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"id": fc.uuid(), "now": fc.now().isoformat(), "random": fc.random()}
        out["charge"] = await fc.step("charge", lambda: {**by(), "n": inp["n"] * 2})
        seen.append((out["id"], out["now"], out["random"], out["charge"]))
        await fc.sleep("nap", nap)
        out["ship"] = await fc.step("ship", by)
        await fc.sleep("nap", nap)
        out["finish"] = await fc.step("finish", by)
        return out

    return cairn.function("mixed-fn", "1", body)


HOUR = 3600.0


def _alternate(srv: DevServer) -> tuple[Any, Any, list[tuple[str, str, float, Any]], Counter[str]]:
    """Runs A and B of "mixed-fn" through four phases (Go, Python, Go,
    Python); before each phase's work is due, the previous phase's worker
    has stopped and the clock is moved an hour, past the naps then due."""
    c = srv.client
    seen: list[tuple[str, str, float, Any]] = []
    ran: Counter[str] = Counter()
    wf = _mixed_function(seen, ran, HOUR)
    log, _ = mem_logger()

    def go_worker() -> _Proc:
        p = _Proc([_env("CAIRN_GO_WORKER")], {"CAIRN_SERVER": srv.url, "CAIRN_MIXED_NAP": "1h"}, "Go worker")
        p.wait_ready(30)
        return p

    def py_worker() -> Any:
        return serving(cairn.Worker(c, name="py-worker", logger=log, claim_wait=1).register(wf))

    go = go_worker()  # A: values and charge, then its first nap
    try:
        a = c.start("mixed-fn", {"n": 21}).run.id
        wait_suspended(c, a, 1)
    finally:
        go.stop()
    with py_worker():  # A: ship, then its second nap; B: values and charge, then its first nap
        c.advance_clock(HOUR)
        wait_suspended(c, a, 2)
        b = c.start("mixed-fn", {"n": 21}).run.id
        wait_suspended(c, b, 1)
    go = go_worker()  # A: finish; B: ship, then its second nap
    try:
        c.advance_clock(HOUR)
        done_a = wait_run(c, a, 30)
        wait_suspended(c, b, 2)
    finally:
        go.stop()
    with py_worker():  # B: finish
        c.advance_clock(HOUR)
        done_b = wait_run(c, b, 30)
    return done_a, done_b, seen, ran


def test_a_function_moves_between_go_and_python_workers() -> None:
    # Run A starts on the Go worker, run B on the Python one; their attempts
    # then alternate (each function suspends twice), each worker replaying
    # what the other recorded: the same ids, kinds, values and wake times.
    # The naps are an hour on a server with a test clock: a nap ends only
    # when the test moves the clock past it, after the worker that must not
    # take the next attempt has stopped, however slow the machine.
    srv = start_server(args=("--test-clock",))
    try:
        done_a, done_b, seen, ran = _alternate(srv)
    finally:
        srv.stop()
    expect = [
        "/uuid#0 value completed",
        "/now#0 value completed",
        "/random#0 value completed",
        "/charge#0 step completed",
        "/nap#0 sleep completed",
        "/ship#0 step completed",
        "/nap#1 sleep completed",
        "/finish#0 step completed",
    ]
    for done, workers in (
        (done_a, ["go-worker suspended", "py-worker suspended", "go-worker completed"]),
        (done_b, ["py-worker suspended", "go-worker suspended", "py-worker completed"]),
    ):
        assert done.status.value == "completed", done.error
        st = step(done, "main")
        assert [f"{x.worker} {x.outcome.value}" for x in st.attempts] == workers
        assert function_ops(done) == expect
        assert st.operations[0].result == done.output["id"]
    # A: Python replayed Go's values and charge, and ran only ship.
    assert done_a.output["charge"] == {"by": "go", "n": 42}
    assert [done_a.output["ship"], done_a.output["finish"]] == [{"by": "py"}, {"by": "go"}]
    # B: Go replayed Python's; Python's second attempt saw its own first one's values.
    assert done_b.output["charge"] == {"by": "py", "n": 42}
    assert [done_b.output["ship"], done_b.output["finish"]] == [{"by": "go"}, {"by": "py"}]
    assert ran["py"] == 3  # A's ship, B's charge and finish
    a_seen = [s for s in seen if s[3] == {"by": "go", "n": 42}]
    b_seen = [s for s in seen if s[3] == {"by": "py", "n": 42}]
    assert len(a_seen) == 1 and a_seen[0][0] == done_a.output["id"] and a_seen[0][2] == done_a.output["random"]
    assert len(b_seen) == 2 and b_seen[0] == b_seen[1] and b_seen[0][0] == done_b.output["id"]

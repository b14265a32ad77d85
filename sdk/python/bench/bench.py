"""Steps/s of the Python worker against the Go worker on the same machine: each
worker (8 slots, no-op steps) alone in a process of its own, on a `cairn
dev` of its own (file store), driven by the same client. Workloads are
bench/e2e's: linear (200 runs of 5 steps started at once) and fanout (one run
of 200 parallel steps, 3 times in turn). The Go worker is bench/e2e's own
(its binary re-executed in the worker role).

    make py-bench      # or: python sdk/python/bench/bench.py --cairn bin/cairn --go-worker bin/cairn-e2e-bench
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import httpx

import cairn

LINEAR, FANOUT = "e2e-linear5", "e2e-fanout200"


def workflows(async_bodies: bool) -> list[cairn.Workflow]:
    async def anoop(ctx: cairn.StepContext, _: Any) -> dict[str, Any]:
        return {}

    def noop(ctx: cairn.StepContext, _: Any) -> dict[str, Any]:
        return {}

    h = anoop if async_bodies else noop
    linear = cairn.workflow(LINEAR, "1")
    for i in range(5):
        linear.task(f"s{i}", h, after=[f"s{i - 1}"] if i else None)
    fan = cairn.workflow(FANOUT, "1")
    for i in range(200):
        fan.task(f"p{i:03d}", h)
    single = cairn.workflow("e2e-single", "1").task("only", lambda ctx, _: str(time.time_ns()))
    return [linear, fan, single]


def worker_main(server: str, slots: int, async_bodies: bool) -> None:
    w = cairn.Worker(server=server, concurrency=slots, name="py-bench").register(*workflows(async_bodies))
    threading.Thread(target=lambda: w.wait_ready() and print("ready", flush=True), daemon=True).start()
    w.serve()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    def __init__(self, args: list[str], env: dict[str, str] | None = None, ready: str | None = None) -> None:
        self.p = subprocess.Popen(
            args,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if ready:
            ok = threading.Event()

            def read() -> None:
                assert self.p.stdout is not None
                for line in self.p.stdout:
                    if ready.encode() in line:
                        ok.set()

            threading.Thread(target=read, daemon=True).start()
            if not ok.wait(60):
                self.stop()
                raise SystemExit(f"{args[0]} did not say {ready!r} within 60 s")

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def start_server(cairn_bin: str) -> tuple[Proc, str, str]:
    d = tempfile.mkdtemp(prefix="cairn-pybench-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    p = Proc([cairn_bin, "dev", "--addr", f"127.0.0.1:{port}", "--dir", d], {"CAIRN_LOG_LEVEL": "error"})
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{url}/v1/api/readyz", timeout=1).status_code == 200:
                return p, url, d
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit("cairn dev did not become ready")
        time.sleep(0.05)


async def linear(url: str, runs: int) -> float:
    async with cairn.AsyncClient(url) as c:
        sem = asyncio.Semaphore(64)

        async def one() -> None:
            async with sem:
                r = (await c.start(LINEAR)).run.id
            done = await c.wait(r)
            assert done.status.value == "completed", done.error

        t0 = time.monotonic()
        await asyncio.gather(*(one() for _ in range(runs)))
        return time.monotonic() - t0


async def fanout(url: str, reps: int) -> float:
    async with cairn.AsyncClient(url) as c:
        t0 = time.monotonic()
        for _ in range(reps):
            r = (await c.start(FANOUT)).run.id
            done = await c.wait(r)
            assert done.status.value == "completed", done.error
        return time.monotonic() - t0


def measure(name: str, cairn_bin: str, worker: list[str], env: dict[str, str], runs: int, reps: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for workload in ("linear", "fanout"):
        srv, url, d = start_server(cairn_bin)
        try:
            e = {k: v.replace("{url}", url) for k, v in env.items()}
            w = Proc([a.replace("{url}", url) for a in worker], e, ready="ready")
            try:
                if workload == "linear":
                    secs = asyncio.run(linear(url, runs))
                    steps = runs * 5
                else:
                    secs = asyncio.run(fanout(url, reps))
                    steps = reps * 200
            finally:
                w.stop()
        finally:
            srv.stop()
            shutil.rmtree(d, ignore_errors=True)
        out[workload] = steps / secs
        print(f"{name:<24} {workload:<7} steps={steps:<5} secs={secs:7.3f} steps/s={steps / secs:7.1f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cairn", default="bin/cairn")
    ap.add_argument("--go-worker", default="bin/cairn-e2e-bench")
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--fanout-reps", type=int, default=3)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--async-bodies", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker_main(a.worker, a.slots, a.async_bodies)
        return
    print(f"# cairn Python worker bench, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}", flush=True)
    go = measure(
        "go worker",
        a.cairn,
        [a.go_worker],
        {"CAIRN_E2E_BENCH_WORKER": "{url}", "CAIRN_E2E_BENCH_SLOTS": str(a.slots)},
        a.runs,
        a.fanout_reps,
    )
    me = [sys.executable, os.path.abspath(__file__), "--worker", "{url}", "--slots", str(a.slots)]
    py = measure("python worker (threads)", a.cairn, me, {}, a.runs, a.fanout_reps)
    pya = measure("python worker (asyncio)", a.cairn, [*me, "--async-bodies"], {}, a.runs, a.fanout_reps)
    for wl in ("linear", "fanout"):
        print(
            f"# {wl}: python/go = {py[wl] / go[wl]:.0%} (threads), {pya[wl] / go[wl]:.0%} (asyncio)",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""Starts a real `cairn dev` (the binary in $CAIRN_BIN, built by make py-test)
on a free 127.0.0.1 port and a temporary directory, with fast lease timings,
for the tests: one server per test module (tests use workflow names of their
own)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import cairn
from cairn._api.types import Unset

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class DevServer:
    url: str
    client: cairn.Client
    proc: subprocess.Popen[bytes]
    dir: str
    log: Path

    def stop(self) -> None:
        self.client.close()
        stop_process(self.proc, 15)
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_process(p: subprocess.Popen[bytes], grace: float) -> None:
    """Terminates p, killing it when it has not exited within grace seconds."""
    p.terminate()
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cairn_bin() -> str:
    b = os.environ.get("CAIRN_BIN")
    if not b:
        pytest.fail("CAIRN_BIN is not set: run the tests with make py-test")
    return b


def start_server(
    env: dict[str, str] | None = None, lease_ttl: str = "1500ms", serve: bool = False, args: tuple[str, ...] = ()
) -> DevServer:
    """Starts cairn dev (or, with serve, cairn serve without keys: a
    deployment's rules, definitions immutable) on a directory of its own."""
    d = tempfile.mkdtemp(prefix="cairn-py-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(d) / "server.log"
    data = str(Path(d) / "data")
    where = ["serve"] if serve else ["dev", "--dir", data]
    extra = {"CAIRN_BLOB": "file://" + data, "CAIRN_DEV": "true"} if serve else {}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [cairn_bin(), *where, "--addr", f"127.0.0.1:{port}", "--lease-ttl", lease_ttl, "--reap-every", "200ms", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "CAIRN_LOG_LEVEL": "warn", **extra, **(env or {})},
        )
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{url}/v1/api/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"cairn dev did not become ready (exit {proc.poll()}):\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return DevServer(url, cairn.Client(url), proc, d, log)


@pytest.fixture(scope="module")
def server() -> Iterator[DevServer]:
    s = start_server()
    yield s
    s.stop()


class Records(logging.Handler):
    """Keeps a logger's records, for assertions."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._mu = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._mu:
            self.records.append(record)

    def messages(self) -> list[str]:
        with self._mu:
            return [r.getMessage() for r in self.records]


_loggers = 0


def mem_logger() -> tuple[logging.Logger, Records]:
    """A logger of its own keeping its records (not propagated: quiet tests)."""
    global _loggers
    _loggers += 1
    log = logging.getLogger(f"cairn.test.{_loggers}")
    log.propagate = bool(os.environ.get("CAIRN_DEBUG"))
    log.setLevel(logging.DEBUG)
    rec = Records()
    log.addHandler(rec)
    return log, rec


@contextlib.contextmanager
def serving(w: cairn.Worker, ready_timeout: float = 15) -> Iterator[threading.Thread]:
    """Serves w on a thread while the block runs; stops and joins it after."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            w.serve(handle_signals=False)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=run, name=f"serve-{w.id}", daemon=True)
    t.start()
    deadline = time.monotonic() + ready_timeout
    while not w.ready.wait(0.05):
        if errors or not t.is_alive() or time.monotonic() > deadline:
            raise AssertionError(f"worker {w.id} did not become ready in {ready_timeout}s: {errors}")
    try:
        yield t
    finally:
        w.stop()
        t.join(60)
        assert not t.is_alive(), f"worker {w.id} did not stop within 60 s of stop()"
    if errors:
        raise errors[0]


def eventually(cond: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Polls cond until it is truthy, failing with what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what} (last: {v!r})")
        time.sleep(interval)


def wait_run(c: cairn.Client, run: str, timeout: float = 30) -> Any:
    """Client.wait, bounded: fails with the run's progress past timeout."""
    box: list[Any] = []
    err: list[BaseException] = []

    def go() -> None:
        try:
            box.append(c.wait(run))
        except BaseException as e:
            err.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        p = c.progress(run)
        raise AssertionError(
            f"run {run} did not end within {timeout}s: status {p.status}, steps "
            + ", ".join(f"{s.id}={s.status}" for s in p.steps)
        )
    if err:
        raise err[0]
    return box[0]


def step(run: Any, id: str) -> Any:
    for s in run.steps:
        if s.id == id:
            return s
    raise AssertionError(f"run {run.id} has no step {id}")


def function_ops(run: Any) -> list[str]:
    """The operations a durable function's run recorded (its step main), each "id kind status"."""
    ops = step(run, "main").operations
    return [] if isinstance(ops, Unset) else [f"{op.id} {op.kind} {op.status}" for op in ops]


def wait_suspended(c: cairn.Client, run: str, n: int) -> None:
    """Waits (bounded) until the run's driver has n suspended attempts."""

    def ok() -> bool:
        return sum(1 for a in step(c.get(run), "main").attempts if a.outcome.value == "suspended") >= n

    eventually(ok, 20, f"run {run}: {n} suspended attempts", interval=0.1)


def run_example(server: DevServer, script: str) -> subprocess.CompletedProcess[str]:
    """Runs examples/python/<script> as a user does, against server: it
    serves, starts a ticket, prints the reply and stops. Fails on a
    non-zero exit."""
    p = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / script)],
        env={**os.environ, "CAIRN_SERVER": server.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def use_transport(monkeypatch: pytest.MonkeyPatch, transport: httpx.BaseTransport) -> None:
    """Makes every cairn.Client made from now on (until the test ends) send
    through transport: the worker's protocol client is one, made in serve."""
    real = cairn.Client.__init__

    def patched(self: cairn.Client, server: str | None = None, key: str | None = None, **kw: Any) -> None:
        real(self, server, key, transport=transport)

    monkeypatch.setattr(cairn.Client, "__init__", patched)


class DropHeartbeats(httpx.BaseTransport):
    """Fails batched heartbeats (a network error) while drop is set."""

    def __init__(self, drop: bool = False) -> None:
        self.inner = httpx.HTTPTransport()
        self.drop = threading.Event()
        if drop:
            self.drop.set()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.drop.is_set() and request.url.path.endswith("/steps/heartbeat"):
            raise httpx.ConnectTimeout("dropped by the test", request=request)
        return self.inner.handle_request(request)

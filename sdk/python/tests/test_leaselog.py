"""A lease id carries the lease's secret nonce: whoever reads it may
complete the lease with a worker key. The worker's log lines name a step
by run, step and attempt, never by lease id, on every level, the warning
of a complete it retries included."""

from __future__ import annotations

import re
import threading
from typing import Any

import httpx
from conftest import DevServer, mem_logger, serving, use_transport, wait_run

import cairn

_LEASE_CALL = re.compile(r"/steps/([^/]+)/(complete|fail|heartbeat|started|checkpoint)$")


class _RecordLeases(httpx.BaseTransport):
    """Records the lease ids of the calls it forwards; the first complete
    breaks off (a network error), so the worker retries it."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.leases: set[str] = set()
        self.broke = False
        self._mu = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        m = _LEASE_CALL.search(request.url.path)
        if m:
            with self._mu:
                self.leases.add(m.group(1))
                first = m.group(2) == "complete" and not self.broke
                self.broke = self.broke or first
            if first:
                raise httpx.ReadError("simulated: connection reset", request=request)
        return self.inner.handle_request(request)


def test_no_log_line_carries_a_lease_id(server: DevServer, monkeypatch: Any) -> None:
    transport = _RecordLeases()
    use_transport(monkeypatch, transport)
    wf = cairn.workflow("leaselog-py", "1").task("a", lambda ctx, _: 1).task("b", lambda ctx, _: 2, after=["a"])
    log, rec = mem_logger()
    w = cairn.Worker(server.client, logger=log, claim_wait=1).register(wf)
    with serving(w):
        run = server.client.start("leaselog-py").run.id
        assert wait_run(server.client, run).status.value == "completed"
    assert transport.broke and len(transport.leases) >= 2, transport.leases
    assert any("retrying" in m for m in rec.messages()), rec.messages()
    for r in rec.records:
        line = f"{r.levelname} {r.getMessage()} {r.__dict__}"
        for lease in transport.leases:
            assert lease not in line, f"a log line carries a lease id: {line}"

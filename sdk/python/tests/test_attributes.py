"""Search attributes against a real cairn dev: set at start and by a step, shown on
the run, filtered by list."""

from __future__ import annotations

import datetime as dt
from typing import Any

from conftest import DevServer, mem_logger, serving, wait_run

import cairn


def test_attributes_are_set_and_filtered(server: DevServer) -> None:
    def bill(ctx: cairn.StepContext, _: Any) -> int:
        ctx.set_attributes({"stage": "billed", "vip": None, "billed_at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)})
        return 1

    wf = cairn.workflow("orders-py", "1").task("bill", bill)
    log, _ = mem_logger()
    with serving(cairn.Worker(server.client, logger=log).register(wf)):
        a = server.client.start("orders-py", attributes={"customer": "acme", "amount": 120.5, "vip": True}).run.id
        b = server.client.start("orders-py", attributes={"customer": "acme", "amount": 80}).run.id
        for run in (a, b):
            assert wait_run(server.client, run).status.value == "completed"
        attrs = server.client.get(a).attributes.to_dict()
        assert attrs == {"customer": "acme", "amount": 120.5, "stage": "billed", "billed_at": "2026-01-02T03:04:05+00:00"}

        def ids(*attr: str) -> list[str]:
            return [r.id for r in server.client.list(attr=list(attr), workflow="orders-py").runs]

        assert ids("customer:acme", "amount>100") == [a]
        assert ids("amount<=120.5") == [b, a]
        assert len(ids("billed_at>=2026-01-01T00:00:00Z")) == 2

"""Debounce and batch on event triggers against a real cairn dev."""

from __future__ import annotations

import time
from typing import Any

from conftest import DevServer, mem_logger, serving

import cairn


def _run_inputs(c: cairn.Client, workflows: list[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        out: dict[str, Any] = {}
        for wf in workflows:
            page = c.list(workflow=wf)
            if len(page.runs) == 1:
                out[wf] = c.get(page.runs[0].id).input_
        if len(out) == len(workflows):
            return out
        assert time.monotonic() < deadline, f"no single run of each of {workflows} within 30s: {out}"
        time.sleep(0.1)


def test_debounce_and_batch_start_one_run_per_window(server: DevServer) -> None:
    def hold(ctx: cairn.StepContext, _: Any) -> int:
        ctx.wait(30)  # returns early when the run is cancelled
        return 0

    quiet = cairn.workflow("quiet-py", "1", debounce={"key": "event.payload.doc", "period": 1}).on("typed-py").task("hold", hold)
    bulk = cairn.workflow("bulk-py", "1", batch={"max_size": 3, "timeout": 1}).on("typed-py").task("hold", hold)
    c = server.client
    log, _ = mem_logger()
    with serving(cairn.Worker(c, logger=log).register(quiet, bulk)):
        for n in range(3):
            res = c.publish("typed-py", {"doc": 1, "n": n}, id=f"py{n}")
            assert len(res.runs) == 2 and all(r.window and not r.run for r in res.runs)
        inputs = _run_inputs(c, ["quiet-py", "bulk-py"])
        assert inputs["quiet-py"] == {"doc": 1, "n": 2}
        assert inputs["bulk-py"] == [{"doc": 1, "n": n} for n in range(3)]
        for wf in ("quiet-py", "bulk-py"):
            for r in c.list(workflow=wf).runs:
                c.cancel(r.id, "test over")

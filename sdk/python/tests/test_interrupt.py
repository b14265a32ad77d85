"""A body that raises cairn.Interrupt(payload) leaves its step interrupted with
the payload; Client.resume_step runs it again with ctx.resumed, the answer and
the payload, and the run completes."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import DevServer, eventually, mem_logger, serving, step, wait_run

import cairn


def test_interrupt_and_resume_step(server: DevServer) -> None:
    c = server.client

    def ask(ctx: cairn.StepContext, _: Any) -> Any:
        if not ctx.resumed:
            raise cairn.Interrupt({"question": "approve?"})
        return {"answer": ctx.resume, "asked": ctx.interrupted}

    wf = cairn.workflow("approve-py", "1").task("ask", ask)
    log, _ = mem_logger()
    w = cairn.Worker(c, logger=log, claim_wait=2).register(wf)
    with serving(w):
        run = c.start("approve-py").run.id

        def interrupted() -> Any:
            r = c.get(run)
            return r if step(r, "ask").status.value == "interrupted" else None

        r = eventually(interrupted, 30, "the step interrupted")
        assert r.status.value == "running"
        assert step(r, "ask").interrupt == {"question": "approve?"}
        c.resume_step(run, "ask", {"approved": True})
        done = wait_run(c, run)
        assert done.status.value == "completed", done.error
        assert done.output == {"answer": {"approved": True}, "asked": {"question": "approve?"}}
        with pytest.raises(cairn.APIError) as e:
            c.resume_step(run, "ask", False)
        assert e.value.status == 409

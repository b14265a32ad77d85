"""A body that raises cairn.Interrupt(payload) leaves its step interrupted with
the payload; Client.resume_step runs it again with ctx.resumed, the answer and
the payload, and the run completes. And a loop: a step's next sends the run
back until its condition fails."""

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


def test_loop_with_next(server: DevServer) -> None:
    """review sends the run back to draft until the draft is long enough; the
    view counts the visits and draft's template sees its own."""
    c = server.client

    def draft(ctx: cairn.StepContext, inp: Any) -> Any:
        return {"words": 100 * inp["visit"]}

    def review(ctx: cairn.StepContext, _: Any) -> Any:
        return {"ok": ctx.output("draft")["words"] >= 300}

    wf = (
        cairn.workflow("essay-py", "1")
        .task("draft", draft, input={"visit": "${visit}"})
        .task("review", review, after=["draft"], next=[("draft", "!steps.review.output.ok")], max_visits=5)
    )
    log, _ = mem_logger()
    w = cairn.Worker(c, logger=log, claim_wait=2).register(wf)
    with serving(w):
        run = c.start("essay-py").run.id
        done = wait_run(c, run)
        assert done.status.value == "completed", done.error
        assert done.output == {"ok": True}
        assert step(done, "draft").visits == 3 and step(done, "review").visits == 3

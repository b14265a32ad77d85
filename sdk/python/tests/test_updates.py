"""Updates: a wait's answer step answers the sender; a retry with the update's id is the same
update; a durable function replies to an update it waited for."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import DevServer, eventually, mem_logger, serving, step, wait_run

import cairn


def test_update_answered_by_the_answer_step(server: DevServer) -> None:
    c = server.client
    wf = (
        cairn.workflow("py-review", "1")
        .wait("approve", "approve", answer="decide")
        .task(
            "decide",
            lambda ctx, x: f"approved by {x['by']}",
            after=["approve"],
            input={"by": "${steps.approve.output.by}"},
        )
    )
    log, _ = mem_logger()
    with serving(cairn.Worker(c, name="py-updates", logger=log, claim_wait=1).register(wf)):
        run = c.start("py-review").run.id
        u = c.send_update(run, "approve", {"by": "ann"}, id="u1", wait_ms=20_000)
        assert u.status.value == "answered", u
        assert (u.answer, u.step) == ("approved by ann", "approve")
        assert c.get_update(run, "u1").answer == "approved by ann"
        with pytest.raises(cairn.APIError) as e:
            c.send_update(run, "approve", {"by": "bob"}, id="u1")
        assert e.value.status == 409


def test_function_replies_to_an_update(server: DevServer) -> None:
    async def body(fc: cairn.Durable, _: Any) -> str:
        u = await fc.wait_for_update("question", "ask", timeout=60)
        await fc.reply(u, f"you asked {u.input}")
        return f"answered {u.id}"

    c = server.client
    log, _ = mem_logger()
    with serving(cairn.Worker(c, logger=log, claim_wait=1).register(cairn.function("py-asker", "1", body))):
        run = c.start("py-asker").run.id
        eventually(
            lambda: any(a.outcome.value == "suspended" for a in step(c.get(run), "main").attempts), 20, "suspended"
        )
        u = c.send_update(run, "ask", "why", id="q1", wait_ms=20_000)
        assert u.status.value == "answered", u
        assert u.answer == "you asked why"
        assert wait_run(c, run, 30).output == "answered q1"

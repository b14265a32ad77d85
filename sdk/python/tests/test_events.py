"""Publishing events: triggers start runs; a wait of several events says which came."""

from __future__ import annotations

from typing import Any

from conftest import DevServer, mem_logger, serving

import cairn


def test_publish_starts_triggered_runs(server: DevServer) -> None:
    c = server.client
    wf = (
        cairn.workflow("py-on-order", "1")
        .on("order.created", "event.payload.total > 100")
        .task("ack", lambda ctx, input: input["total"])
        .wait_any("decide", ["approve", "reject"], after=["ack"], if_="has(event.payload.by)", timeout=60)
    )
    assert wf.definition()["on"] == [{"event": "order.created", "if": "event.payload.total > 100"}]
    log, _ = mem_logger()
    w = cairn.Worker(c, name="py-events", logger=log, claim_wait=2).register(wf)
    with serving(w):
        small = c.publish("order.created", {"total": 5})
        assert small.runs == [] and small.id
        res = c.publish("order.created", {"total": 500}, id="py-o1")
        assert len(res.runs) == 1
        again = c.publish("order.created", {"total": 500}, id="py-o1")
        assert again.runs[0].existed and again.runs[0].run == res.runs[0].run
        run = res.runs[0].run
        c.send_event(run, "reject", {"by": "ann"}, id="r1")
        done: Any = c.wait(run)
        assert done.status.value == "completed", done.error
        assert (done.event.name, done.event.id) == ("order.created", "py-o1")
        assert done.output == {"event": "reject", "id": "r1", "payload": {"by": "ann"}}

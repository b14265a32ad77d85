"""A test server's clock (``cairn dev --test-clock``), moved by the client:
a day's function sleep passes in milliseconds, at the move that reaches it,
measured on the server's clock (the function starts after the clock was
moved an hour, so a sleep on this process's clock would come due an hour
early); a server without a test clock refuses a move with a 404."""

from __future__ import annotations

import pytest
from conftest import eventually, mem_logger, serving, start_server, step, wait_run

import cairn

HOUR = 3600.0


def test_moving_the_clock_ends_a_day_long_sleep() -> None:
    srv = start_server(args=("--test-clock", "--reap-every", "1h"))  # only the moves reap
    try:

        async def body(fc: cairn.Durable, _: object) -> str:
            await fc.sleep("nap", "24h")
            return "rested"

        log, _ = mem_logger()
        w = cairn.Worker(srv.client, logger=log, claim_wait=1).register(cairn.function("fnap-py", "1", body))
        with serving(w):
            moved = srv.client.advance_clock(HOUR)
            assert moved.offset_ms == 3_600_000
            run = srv.client.start("fnap-py").run.id

            def suspended() -> bool:
                return any(a.outcome.value == "suspended" for a in step(srv.client.get(run), "main").attempts)

            eventually(suspended, 20, "the function to suspend on its sleep", interval=0.1)
            srv.client.advance_clock(24 * HOUR - 60)
            assert srv.client.get(run).status.value == "running", "the day's sleep ended a minute early"
            srv.client.advance_clock(60)
            done = wait_run(srv.client, run, 20)
            assert done.status.value == "completed", done.error
            assert done.output == "rested"
    finally:
        srv.stop()


def test_no_test_clock_is_a_404() -> None:
    srv = start_server()
    try:
        with pytest.raises(cairn.APIError) as err:
            srv.client.advance_clock(HOUR)
        assert err.value.status == 404
    finally:
        srv.stop()

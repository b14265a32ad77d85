"""The result cache against a real cairn dev: a step with a cache runs once
per key; a later run with the key takes its output without the handler,
marked cached; invalidating the key runs it again; the asyncio client
invalidates too."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import DevServer, eventually, mem_logger, serving, step, wait_run

import cairn


def test_a_later_run_is_completed_from_the_cache(server: DevServer) -> None:
    client = cairn.Client(server.url)
    calls = []

    def get(_: cairn.StepContext, inp: Any) -> str:
        calls.append(inp["url"])
        return f"{inp['url']}#{len(calls)}"

    wf = cairn.workflow("cache-py", "1").task("get", get, cache=cairn.Cache("input.url", "1h"))

    def run() -> Any:
        r = wait_run(client, client.start("cache-py", input={"url": "u1"}).run.id)
        assert r.status.value == "completed"
        return r

    log, _ = mem_logger()
    with serving(cairn.Worker(client, logger=log).register(wf)):
        # The entry is written just after the complete, so a run started at
        # once may miss it and compute (and write) its own: a cached step
        # comes from one of the runs that computed.
        computed: dict[str, Any] = {}

        def cached_run() -> Any:
            r = run()
            if step(r, "get").cached:
                return r
            computed[r.id] = step(r, "get").output
            return None

        cached = eventually(cached_run, 30, "a run completed from the cache")
        got = step(cached, "get")
        assert got.cached.run in computed and got.output == computed[got.cached.run]
        assert client.invalidate_cache("cache-py", "get", "u1") == 1
        assert not step(run(), "get").cached

        async def main() -> int:
            async with cairn.AsyncClient(server.url) as c:
                return await c.invalidate_cache("cache-py", "get")

        assert asyncio.run(main()) >= 0
    with pytest.raises(ValueError, match="cache applies to task steps only"):
        cairn.workflow("bad", "1").sleep("nap", "1s", cache={"ttl": "1h"})
    client.close()

"""The long-term store against a real cairn dev: steps of concurrent runs
count into one key with update (no increment lost), memos list by prefix,
conditions refuse stale writes, the asyncio form does the same, and with a
keyring the bucket holds no value in the clear."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import DevServer, mem_logger, serving, wait_run

import cairn
from cairn.codec import Key


def _holds(server: DevServer, needle: str) -> bool:
    return any(needle.encode() in p.read_bytes() for p in (Path(server.dir) / "data").rglob("*") if p.is_file())


def test_steps_update_one_key_and_the_bucket_holds_ciphertext(server: DevServer) -> None:
    ring = cairn.Keyring([Key("k1", os.urandom(32))])
    client = cairn.Client(server.url, codec=ring)
    tally = client.store("tally-py")
    runs = 10

    def add(ctx: cairn.StepContext, _: Any) -> bool:
        tally.put(f"memo:{ctx.info.run}", "PY-MEMO-PLAIN")
        tally.update("total", lambda old: {"py_tally": (old or {}).get("py_tally", 0) + 1})
        return True

    wf = cairn.workflow("store-count-py", "1").task("add", add)
    log, _ = mem_logger()
    with serving(cairn.Worker(client, logger=log, concurrency=5).register(wf)):
        ids = [client.start("store-count-py").run.id for _ in range(runs)]
        for i in ids:
            assert wait_run(client, i).status.value == "completed"
    total = tally.get("total")
    assert total is not None and total.value == {"py_tally": runs}
    assert len(list(tally.list_keys("memo:"))) == runs
    assert not _holds(server, "PY-MEMO-PLAIN") and not _holds(server, "py_tally")

    stale = total.version
    tally.put("total", 0, if_version=stale)
    with pytest.raises(cairn.APIError) as e:
        tally.put("total", -1, if_version=stale)
    assert e.value.status == 409
    tally.delete("total", if_version=tally.get("total").version)  # type: ignore[union-attr]
    assert tally.get("total") is None
    tally.put("total", 1, if_absent=True)
    client.close()


def test_the_asyncio_store(server: DevServer) -> None:
    async def main() -> None:
        async with cairn.AsyncClient(server.url) as c:
            st = c.store("async-py")
            await asyncio.gather(*(st.update("n", lambda old: (old or 0) + 1) for _ in range(8)))
            got = await st.get("n")
            assert got is not None and got.value == 8
            assert [k.key async for k in st.list_keys()] == ["n"]
            await st.delete("n")
            assert await st.get("n") is None

    asyncio.run(main())

"""Client-side encryption against a real cairn dev: a client and a worker
given a keyring (codec=) encrypt what they write and decode what they read,
so the server's bucket holds none of the plaintext; rotation, a worker
without the key (class codec), the asyncio forms, and a run whose steps a Go
worker with the same keyring and this SDK share."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import DevServer, mem_logger, serving, step, wait_run

import cairn
from cairn._api.types import Unset
from cairn.codec import Key, is_encrypted

MARKERS = ("card-4242-marker", "state-marker", "event-marker", "fn-step-marker", "child-marker", "go-secret-marker")


def _ring(*ids: str, secrets: dict[str, bytes] | None = None) -> cairn.Keyring:
    secrets = secrets if secrets is not None else _SECRETS
    return cairn.Keyring(Key(i, secrets.setdefault(i, os.urandom(32))) for i in ids)


_SECRETS: dict[str, bytes] = {}


def _ring_file(path: Path, *ids: str) -> Path:
    keys = [{"id": i, "key": base64.b64encode(_SECRETS.setdefault(i, os.urandom(32))).decode()} for i in ids]
    path.write_text(json.dumps({"keys": keys}))
    return path


def _bucket_holds(server: DevServer, *needles: str) -> list[str]:
    """The markers found in any file of the server's store."""
    found = []
    data = Path(server.dir) / "data"
    blobs = [p.read_bytes() for p in data.rglob("*") if p.is_file()]
    assert blobs, f"no files under {data}"
    for n in needles:
        if any(n.encode() in b for b in blobs):
            found.append(n)
    return found


def _worker(c: cairn.Client | cairn.AsyncClient, *wfs: cairn.Workflow, **kw: Any) -> cairn.Worker:
    log, _ = mem_logger()
    return cairn.Worker(c, logger=log, claim_wait=1, **kw).register(*wfs)


def _charge(ctx: cairn.StepContext, x: dict[str, Any]) -> dict[str, Any]:
    assert ctx.state("secret") == "state-marker"  # the initial state, decoded
    ctx.set_state("seen", {"card": x["card"]["number"]})
    return {"charged": x["card"]["number"], "tenant": x["tenant"]}


def _pay() -> cairn.Workflow:
    return (
        cairn.workflow("enc-pay-py", "1")
        .encrypted("tenant")
        .task("charge", _charge, input={"card": "${input.card}", "tenant": "${input.tenant}"})
        .wait("approval", "approve", after=["charge"])
        .task(
            "receipt",
            lambda ctx, x: {"receipt": x, "seen": ctx.state("seen"), "approval": ctx.output("approval")},
            after=["approval"],
            input="${steps.charge.output}",
        )
    )


def test_definition_says_encrypted_and_clear() -> None:
    d = _pay().definition()
    assert d["encrypted"] is True and d["clear"] == ["tenant"]
    assert "encrypted" not in cairn.workflow("plain", "1").task("a", lambda c, x: x).definition()


def test_an_encrypted_run_completes_and_the_bucket_holds_no_plaintext(server: DevServer) -> None:
    ring = _ring("k1")
    c = cairn.Client(server.url, codec=ring)
    plain = server.client  # no keyring: sees what the server holds

    child = cairn.workflow("enc-child-py", "1").task("x", lambda ctx, x: {"child": x["v"], "m": "child-marker"})

    async def fn(fc: cairn.Durable, inp: dict[str, Any]) -> dict[str, Any]:
        s = await fc.step("make", lambda: {"v": "fn-step-marker", "n": inp["n"]})
        await fc.sleep("nap", 2.5)  # suspends: the replay decodes the recorded results
        ch = await fc.invoke("child", "enc-child-py", {"v": s["v"]})
        ev = await fc.wait_for_event("go", "go")
        return {"s": s, "child": ch, "ev": ev, "id": fc.uuid()}

    with serving(_worker(c, _pay(), child, cairn.function("enc-fn-py", "1", fn))):
        run = c.start(
            "enc-pay-py", {"card": {"number": "card-4242-marker"}, "tenant": "acme"}, state={"secret": "state-marker"}
        ).run.id
        fn_run = c.start("enc-fn-py", {"n": 3}).run.id
        # The event reaches the wait step once charge completed.
        for r, name in ((run, "approve"), (fn_run, "go")):
            _send_when_waiting(c, r, name)
        done = wait_run(c, run, 30)
        fdone = wait_run(c, fn_run, 60)
    assert done.status.value == "completed", done.error
    assert done.input_ == {"card": {"number": "card-4242-marker"}, "tenant": "acme"}
    assert done.output == {
        "receipt": {"charged": "card-4242-marker", "tenant": "acme"},
        "seen": {"card": "card-4242-marker"},
        "approval": {"ok": "event-marker"},
    }
    assert done.state.additional_properties["secret"] == "state-marker"
    assert fdone.status.value == "completed", fdone.error
    assert fdone.output["s"] == {"v": "fn-step-marker", "n": 3}
    assert fdone.output["child"] == {"child": "fn-step-marker", "m": "child-marker"}
    assert fdone.output["ev"] == {"ok": "event-marker"}
    ops = step(fdone, "main").operations
    assert not isinstance(ops, Unset) and ops[0].result == {"v": "fn-step-marker", "n": 3}

    # What the server holds: ciphertext, but the clear key.
    raw = plain.get(run)
    assert is_encrypted(raw.input_["card"]) and raw.input_["tenant"] == "acme"
    assert is_encrypted(raw.state.additional_properties["secret"])
    assert all(is_encrypted(s.output) for s in raw.steps)
    rops = step(plain.get(fn_run), "main").operations
    assert not isinstance(rops, Unset)
    assert all(is_encrypted(op.result) for op in rops if not isinstance(op.result, Unset))
    assert _bucket_holds(server, *MARKERS[:5]) == []
    # The journal reads decoded through the keyring.
    assert c.journal(run)
    c.close()


def _send_when_waiting(c: cairn.Client, run: str, name: str) -> None:
    c.send_event(run, name, {"ok": "event-marker"}, id=f"{run}-{name}")


def test_key_rotation(server: DevServer) -> None:
    old = _ring("r1")
    wf = cairn.workflow("enc-rot-py", "1").task("a", lambda ctx, x: {"echo": x})
    new = _ring("r2", "r1")  # a new key first: it encrypts, both decrypt
    with cairn.Client(server.url, codec=new) as c2, serving(_worker(c2, wf)):
        with cairn.Client(server.url, codec=old) as c1:  # a client not rotated yet
            r1 = c1.start("enc-rot-py", {"v": "rotate-1"}).run.id
        r2 = c2.start("enc-rot-py", {"v": "rotate-2"}).run.id
        d1, d2 = wait_run(c2, r1), wait_run(c2, r2)
    assert d1.status.value == "completed" and d1.output == {"echo": {"v": "rotate-1"}}
    assert d2.status.value == "completed" and d2.output == {"echo": {"v": "rotate-2"}}
    raw1, raw2 = server.client.get(r1), server.client.get(r2)
    assert raw1.input_["v"]["$cairn_encrypted"]["kid"] == "r1"
    assert raw2.input_["v"]["$cairn_encrypted"]["kid"] == "r2"
    assert step(raw1, "a").output["$cairn_encrypted"]["kid"] == "r2"  # the worker wrote with the new key
    # A client holding only the old key cannot read what the new one wrote.
    with cairn.Client(server.url, codec=old) as c1, pytest.raises(cairn.CodecError) as ei:
        c1.get(r2)
    assert ei.value.kind == "unknown_key" and ei.value.kid == "r2" and "r2" in str(ei.value)


def test_a_worker_without_the_key_fails_the_step_with_class_codec(server: DevServer) -> None:
    wf = cairn.workflow("enc-nokey-py", "1").task("a", lambda ctx, x: x, retry=cairn.RetryPolicy(max_attempts=1))
    with cairn.Client(server.url, codec=_ring("other")) as w, serving(_worker(w, wf)):
        with cairn.Client(server.url, codec=_ring("k9")) as c:
            run = c.start("enc-nokey-py", {"v": 1}).run.id
        done = wait_run(server.client, run)
    assert done.status.value == "failed"
    err = step(done, "a").error
    assert err.class_ == cairn.CLASS_CODEC, err
    assert '"k9"' in err.message, err.message


def test_async_client_and_asyncio_worker(server: DevServer) -> None:
    import asyncio

    async def body(ctx: cairn.StepContext, x: Any) -> Any:
        await asyncio.sleep(0)
        return {"got": x, "state": ctx.state("s")}

    wf = cairn.workflow("enc-async-py", "1").task("a", body)

    async def main() -> tuple[Any, Any, Any]:
        async with cairn.AsyncClient(server.url, codec=_ring("ka")) as ac:
            w = _worker(ac, wf)
            serve = asyncio.create_task(w.serve_async())
            try:
                while not w.ready.is_set():
                    await asyncio.sleep(0.05)
                run = (await ac.start("enc-async-py", ["async-marker"], state={"s": "async-state"})).run.id
                done = await asyncio.wait_for(ac.wait(run), 30)
                sch = await ac.create_schedule("enc-async-py", "0 0 1 1 *", id="enc-sch-py", input={"v": "sch"})
            finally:
                w.stop()
                await serve
            return done, sch, await ac.get_schedule("enc-sch-py")

    done, sch, got = asyncio.run(main())
    assert sch.id == got.id == "enc-sch-py"
    assert done.status.value == "completed", done.error
    assert done.output == {"got": ["async-marker"], "state": "async-state"}
    raw = server.client.get(done.id)
    assert is_encrypted(raw.input_)  # not an object: encrypted whole
    assert is_encrypted(server.client.get_schedule("enc-sch-py").input_["v"])
    assert _bucket_holds(server, "async-marker", "async-state") == []


def test_a_go_worker_and_a_python_worker_share_an_encrypted_run(server: DevServer, tmp_path: Path) -> None:
    exe = os.environ.get("CAIRN_GO_CODEC_WORKER")
    if not exe:
        pytest.fail("CAIRN_GO_CODEC_WORKER is not set: run the tests with make py-test")
    keys = _ring_file(tmp_path / "keys.json", "g2", "g1")
    ring = cairn.Keyring.load(keys)
    go = subprocess.Popen(
        [exe],
        env={**os.environ, "CAIRN_SERVER": server.url, "CAIRN_KEYRING": str(keys)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    ready = threading.Event()
    errs: list[bytes] = []

    def read() -> None:
        assert go.stdout is not None
        for line in go.stdout:
            if b"ready" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    threading.Thread(target=lambda: errs.extend(go.stderr or []), daemon=True).start()
    # The Go worker's definition; a is served there, b here.
    wf = (
        cairn.workflow("codec-mixed", "1")
        .encrypted("tenant")
        .remote_task("a", input={"card": "${input.card}", "tenant": "${input.tenant}"})
        .task("b", lambda ctx, x: {"from_go": x, "by": "python"}, after=["a"], input="${steps.a.output}")
    )
    try:
        assert ready.wait(30), b"".join(errs).decode(errors="replace")[-2000:]
        with cairn.Client(server.url, codec=ring) as c, serving(_worker(c, wf, name="py-codec-worker")):
            run = c.start("codec-mixed", {"card": {"number": "card-4242-marker"}, "tenant": "acme"}).run.id
            done = wait_run(c, run, 60)
    finally:
        go.terminate()
        go.wait(30)
    assert done.status.value == "completed", done.error
    card = {"number": "card-4242-marker"}
    assert done.output == {
        "from_go": {"by": "go", "card": card, "tenant": "acme", "secret": "go-secret-marker"},
        "by": "python",
    }
    raw = server.client.get(run)
    assert all(is_encrypted(s.output) for s in raw.steps)
    assert step(raw, "a").output["$cairn_encrypted"]["kid"] == "g2"
    assert _bucket_holds(server, "card-4242-marker", "go-secret-marker") == []


def test_a_function_continues_as_new_with_its_input_encrypted(server: DevServer) -> None:
    # The input of the run a function continues as is sealed like a run
    # input: the server holds it encrypted, the keyed client reads it.
    ring = _ring("k1")
    c = cairn.Client(server.url, codec=ring)

    async def fn(fc: cairn.Durable, inp: dict[str, Any]) -> str:
        if inp.get("next") is None:
            raise cairn.ContinueAsNew({"next": "cont-marker"})
        return str(inp["next"])

    with serving(_worker(c, cairn.function("enc-cont-py", "1", fn))):
        first = c.start("enc-cont-py", {}).run.id
        last = c.wait(first)
    assert last.status.value == "completed", last.error
    assert last.output == "cont-marker" and last.continued_from == first
    assert last.input_ == {"next": "cont-marker"}
    raw = server.client.get(last.id)
    assert is_encrypted(raw.input_["next"])
    assert _bucket_holds(server, "cont-marker") == []
    c.close()

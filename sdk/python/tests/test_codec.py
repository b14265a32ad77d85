"""The codec against the vectors the Go and TypeScript SDKs check too."""

from __future__ import annotations

import base64
import json
import pathlib
from typing import Any

import pytest

from cairn.codec import CodecError, Keyring, is_encrypted

VECTORS: dict[str, Any] = json.loads(
    (pathlib.Path(__file__).parents[2] / "codec" / "testdata" / "vectors.json").read_text("utf-8")
)


def test_vectors() -> None:
    ring = Keyring.parse(VECTORS["keyring"])
    assert ring.key_ids == ["k2", "k1"]
    assert len(VECTORS["encrypt"]) >= 10 and len(VECTORS["fail"]) >= 10
    for v in VECTORS["encrypt"]:
        assert ring._seal(v["kid"], base64.b64decode(v["nonce"]), v["plaintext"]) == v["envelope"], v["name"]
        assert ring.decrypt_text(v["envelope"]) == v["plaintext"], v["name"]
    for v in VECTORS["fail"]:
        with pytest.raises(CodecError) as info:
            ring.decrypt(v["envelope"])
        assert info.value.kind == v["error"], v["name"]
        if v.get("kid"):
            assert json.dumps(v["kid"]) in str(info.value)
    for v in VECTORS["deep"]:
        assert ring.decode_deep(v["value"]) == v["decoded"], v["name"]
    for v in VECTORS["is_encrypted"]:
        assert is_encrypted(v["value"]) == v["want"], v["value"]


def test_round_trip_and_rotation() -> None:
    old = Keyring.parse(VECTORS["keyring"] | {"keys": VECTORS["keyring"]["keys"][1:]})
    env = old.encrypt({"x": "é", "n": [1, None]})
    assert old.encrypt({"x": "é", "n": [1, None]}) != env
    assert Keyring.parse(VECTORS["keyring"]).decrypt(env) == {"x": "é", "n": [1, None]}
    with pytest.raises(CodecError) as info:
        old.decrypt(Keyring.parse(VECTORS["keyring"]).encrypt(1))
    assert info.value.kind == "unknown_key" and info.value.kid == "k2"

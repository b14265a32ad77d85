"""Client-side encryption of JSON values: the format of the Go SDK's
sdk/codec package, checked against its testdata/vectors.json.

An encrypted value is ``{"$cairn_encrypted": {"v": 1, "alg": "A256GCM",
"kid": ..., "nonce": ..., "ct": ...}}``: the UTF-8 JSON text of the value
sealed with AES-256-GCM under the key ``kid`` names, the additional data
``"cairn-codec-v1:" + kid``, nonce and ciphertext-with-tag in standard
base64. A keyring's first key encrypts, every key decrypts: to rotate, put
a new key first.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MARKER = "$cairn_encrypted"
_AAD_PREFIX = b"cairn-codec-v1:"
_NONCE = 12
_TAG = 16
_KID = re.compile(r"^[\x21-\x7e]{1,128}$")
_B64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")

ErrorKind = Literal["unknown_key", "auth", "malformed"]


class CodecError(Exception):
    """A value that does not decrypt: ``kind`` is unknown_key (``kid`` names
    the key), auth (wrong key, or the value was changed) or malformed."""

    def __init__(self, kind: ErrorKind, message: str, kid: str | None = None) -> None:
        super().__init__(f"cairn codec: {message}")
        self.kind: ErrorKind = kind
        self.kid = kid


@dataclass(frozen=True)
class Key:
    id: str
    secret: bytes


def is_encrypted(v: object) -> bool:
    """Whether v is an encrypted value: a dict whose one key is the marker, holding a dict."""
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get(MARKER), dict)


def _b64(s: object, what: str) -> bytes:
    if not isinstance(s, str) or len(s) % 4 != 0 or not _B64.match(s):
        raise CodecError("malformed", f"{what} is not standard base64")
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as err:
        raise CodecError("malformed", f"{what} is not standard base64") from err


def dumps(v: object) -> str:
    """The JSON text the codec encrypts (compact, UTF-8)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


class Keyring:
    """Encrypts with its first key, decrypts with any of them."""

    def __init__(self, keys: Iterable[Key]) -> None:
        self._keys: list[tuple[str, AESGCM]] = []
        seen: set[str] = set()
        for i, k in enumerate(keys):
            if not _KID.match(k.id):
                raise ValueError(f"cairn codec: key {i}: id {k.id!r} must be 1 to 128 printable ASCII characters")
            if k.id in seen:
                raise ValueError(f"cairn codec: key id {k.id!r} appears twice")
            if len(k.secret) != 32:
                raise ValueError(f"cairn codec: key {k.id!r} is {len(k.secret)} bytes, want 32 (AES-256)")
            seen.add(k.id)
            self._keys.append((k.id, AESGCM(k.secret)))
        if not self._keys:
            raise ValueError("cairn codec: a keyring needs at least one key")
        self._by_id = dict(self._keys)

    @classmethod
    def parse(cls, data: str | bytes | Mapping[str, Any]) -> Keyring:
        """Reads ``{"keys": [{"id": "k2", "key": "<base64 of 32 bytes>"}, ...]}``, newest first."""
        f = json.loads(data) if isinstance(data, (str, bytes)) else data
        keys = f.get("keys") if isinstance(f, Mapping) else None
        if not isinstance(keys, list):
            raise ValueError("cairn codec: keyring: no keys array")
        out = []
        for i, k in enumerate(keys):
            if not isinstance(k, Mapping) or not isinstance(k.get("id"), str):
                raise ValueError(f"cairn codec: keyring: key {i}: no id")
            try:
                secret = _b64(k.get("key"), "key")
            except CodecError as err:
                raise ValueError(f"cairn codec: keyring: key {i} ({k['id']}): not standard base64") from err
            out.append(Key(k["id"], secret))
        return cls(out)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Keyring:
        with open(path, "rb") as f:
            return cls.parse(f.read())

    @property
    def key_ids(self) -> list[str]:
        return [kid for kid, _ in self._keys]

    def encrypt(self, v: object) -> dict[str, Any]:
        """v encrypted with the first key under a fresh nonce (an encrypted value is returned as it is)."""
        if is_encrypted(v):
            assert isinstance(v, dict)
            return v
        return self._seal(self._keys[0][0], os.urandom(_NONCE), dumps(v))

    def _seal(self, kid: str, nonce: bytes, text: str) -> dict[str, Any]:
        aead = self._by_id.get(kid)
        if aead is None:
            raise CodecError("unknown_key", f"unknown key id {json.dumps(kid)}", kid)
        ct = aead.encrypt(nonce, text.encode("utf-8"), _AAD_PREFIX + kid.encode("ascii"))
        return {
            MARKER: {
                "v": 1,
                "alg": "A256GCM",
                "kid": kid,
                "nonce": base64.b64encode(nonce).decode("ascii"),
                "ct": base64.b64encode(ct).decode("ascii"),
            }
        }

    def decrypt_text(self, env: object) -> str:
        """The plaintext JSON text of an encrypted value."""
        if not is_encrypted(env):
            raise CodecError("malformed", f"not an object whose one key is {MARKER}")
        assert isinstance(env, dict)
        e = env[MARKER]
        if e.get("v") != 1:
            raise CodecError("malformed", f"version {e.get('v')!r}, this codec reads 1")
        if e.get("alg") != "A256GCM":
            raise CodecError("malformed", f"algorithm {e.get('alg')!r}, this codec reads A256GCM")
        kid = e.get("kid")
        aead = self._by_id.get(kid) if isinstance(kid, str) else None
        if aead is None or not isinstance(kid, str):
            raise CodecError(
                "unknown_key", f"unknown key id {json.dumps(kid)} (the keyring holds {self.key_ids})", str(kid)
            )
        nonce = _b64(e.get("nonce"), "nonce")
        if len(nonce) != _NONCE:
            raise CodecError("malformed", f"nonce is {len(nonce)} bytes, want {_NONCE}")
        ct = _b64(e.get("ct"), "ct")
        if len(ct) < _TAG:
            raise CodecError("malformed", f"ct is {len(ct)} bytes, shorter than the tag")
        try:
            plain = aead.decrypt(nonce, ct, _AAD_PREFIX + kid.encode("ascii"))
        except InvalidTag as err:
            raise CodecError(
                "auth", f"value does not decrypt with key {json.dumps(kid)} (wrong key, or the value was changed)", kid
            ) from err
        return plain.decode("utf-8")

    def decrypt(self, env: object) -> Any:
        """The value an encrypted value holds."""
        try:
            return json.loads(self.decrypt_text(env))
        except json.JSONDecodeError as err:
            raise CodecError("malformed", "plaintext is not JSON") from err

    def decode_deep(self, v: Any, _depth: int = 0) -> Any:
        """v with every encrypted value anywhere inside it replaced by its plaintext."""
        if _depth > 1000:
            raise CodecError("malformed", "nested more than 1000 deep")
        if is_encrypted(v):
            return self.decode_deep(self.decrypt(v), _depth + 1)
        if isinstance(v, dict):
            return {k: self.decode_deep(x, _depth + 1) for k, x in v.items()}
        if isinstance(v, list):
            return [self.decode_deep(x, _depth + 1) for x in v]
        return v


# ---- what the client and the worker encrypt (the Go SDK's sdk/codec.go) ----

#: The class of a step failed because a value it reads does not decrypt: its
#: key is not in the worker's keyring (the message names the key id), or the
#: value was changed.
CLASS_CODEC = "codec"


def seal_value(k: Keyring | None, v: Any) -> Any:
    """v encrypted whole (None, or no keyring: v as it is)."""
    if k is None or v is None:
        return v
    return k.encrypt(v)


def seal_map(k: Keyring | None, m: Mapping[str, Any], clear: Iterable[str] = ()) -> dict[str, Any]:
    """m with its values encrypted, but those of the keys in clear (a state patch, initial state)."""
    if k is None or not m:
        return dict(m)
    keep = set(clear)
    out: dict[str, Any] = {}
    for key, v in m.items():
        if key in keep:
            out[key] = v
            continue
        try:
            out[key] = k.encrypt(v)
        except CodecError as err:
            raise CodecError(err.kind, f"{key}: {err}", err.kid) from err
    return out


def seal_top(k: Keyring | None, v: Any, clear: Iterable[str] = ()) -> Any:
    """Each top-level value of v encrypted when v is an object, but those of the
    keys in clear; v whole otherwise (a run input, an invoked run's input)."""
    if k is None or v is None:
        return v
    if not isinstance(v, dict) or is_encrypted(v):
        return k.encrypt(v)
    return seal_map(k, v, clear)


def open_value(k: Keyring | None, v: Any) -> Any:
    """v with its encrypted values decoded (no keyring: v as it is)."""
    if k is None:
        return v
    return k.decode_deep(v)

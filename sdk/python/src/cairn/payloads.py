"""Payloads by reference. A value larger than the server's inline limit (a
run's input, a step's output, a state value, an event payload) reaches
clients as a reference, {"$cairn_payload": {"sha256": …, "bytes": …}}. The
client resolves the references of the runs it returns, and a worker those of
a lease (input, outputs, state) before the body runs, so code using the SDK
never sees one."""

from __future__ import annotations

import re
from typing import Any

_SHA = re.compile(r"^[0-9a-f]{64}$")


def as_payload_ref(v: Any) -> tuple[str, int] | None:
    """The (sha256, bytes) of the reference v is, or None."""
    if not isinstance(v, dict) or len(v) != 1 or "$cairn_payload" not in v:
        return None
    p = v["$cairn_payload"]
    if not isinstance(p, dict):
        return None
    sha, n = p.get("sha256"), p.get("bytes")
    if not isinstance(sha, str) or not _SHA.match(sha) or not isinstance(n, int):
        return None
    return sha, n

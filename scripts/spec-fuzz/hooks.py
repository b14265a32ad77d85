"""Checks and hooks the API fuzzer adds to schemathesis' own.

Loaded by schemathesis through SCHEMATHESIS_HOOKS (scripts/spec-fuzz/run.py
sets it). The server under test keeps its bucket in a directory
(CAIRN_FUZZ_BUCKET), which is the whole of its state: a refused request
must leave every object in it as it was.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import Any

import schemathesis

_BUCKET = os.environ.get("CAIRN_FUZZ_BUCKET", "")
# The bucket as it was before the request in flight (one at a time: the
# fuzzer runs with one worker).
_before: dict[str, Any] = {}


def _bucket_state() -> dict[str, tuple[int, int]]:
    """Every object in the bucket: its size and modification time. The file
    store's own files are not objects and are left out: its lock files
    (root/~locks/, made the first time a key of their shard is written
    conditionally, whatever the outcome) and writes in progress (~tmp-)."""
    state: dict[str, tuple[int, int]] = {}
    for dirpath, dirs, files in os.walk(_BUCKET):
        if dirpath == _BUCKET and "~locks" in dirs:
            dirs.remove("~locks")
        for name in files:
            if name.startswith("~tmp-"):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue  # a temporary file renamed meanwhile
            state[os.path.relpath(path, _BUCKET)] = (st.st_size, st.st_mtime_ns)
    return state


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if _BUCKET:
        _before["case"] = case
        _before["state"] = _bucket_state()


@schemathesis.check
def server_error_is_503_with_retry_after(ctx: Any, response: Any, case: Any) -> bool | None:
    """No 5xx but a 503 that says when to retry: anything else is a bug
    (a 500 is an unmapped error or a panic, a 502 a store failure, which
    a healthy local store never has)."""
    status = response.status_code
    if status < 500:
        return None
    if status == 503 and response.headers.get("retry-after"):
        return None
    raise AssertionError(
        f"{status} answered to {case.method} {case.formatted_path}"
        + ("" if status != 503 else " without Retry-After")
        + f": {response.text[:500]}"
    )


@schemathesis.check
def refused_request_changes_nothing(ctx: Any, response: Any, case: Any) -> bool | None:
    """A request answered 4xx left the bucket as it was: nothing it sent
    was applied, in part or in whole."""
    if not _BUCKET or response.status_code < 400 or response.status_code >= 500:
        return None
    if _before.get("case") is not case:
        return None  # not the request before_call saw (a replay elsewhere)
    before, after = _before["state"], _bucket_state()
    if before == after:
        return None
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    raise AssertionError(
        f"{response.status_code} answered to {case.method} {case.formatted_path}, "
        f"yet the bucket changed: added {added[:5]}, removed {removed[:5]}, changed {changed[:5]}"
    )


# The workflow run.py registers: generated starts and schedules name it
# now and then, so that they succeed and their links lead to real runs
# and schedules. Only a name and version that are valid already are
# replaced (by valid ones): an invalid case stays invalid.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@schemathesis.hook("map_body").apply_to(method="POST", path_regex=r"^/v1/api/(runs|schedules)$")
def name_the_seeded_workflow(context: Any, body: Any) -> Any:
    if not isinstance(body, dict):
        return body
    wf = body.get("workflow")
    if isinstance(wf, str) and _NAME.match(wf) and len(wf) <= 128 and zlib.crc32(wf.encode()) % 3 != 0:
        body = dict(body, workflow="wf")
        if isinstance(body.get("version"), str) and len(body["version"]) <= 64:
            body["version"] = "1"
    return body

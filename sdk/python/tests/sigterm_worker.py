"""A worker process for the SIGTERM drain test (test_worker.py): serves one
step whose body says "running" on stdout, then waits (bounded) for the file
$GATE to exist before it returns. serve() handles SIGTERM by draining."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import cairn


def work(ctx: cairn.StepContext, _: Any) -> dict[str, int]:
    print("running", flush=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(os.environ["GATE"]):
        if time.monotonic() > deadline:
            raise cairn.fatal("the gate never opened")
        ctx.wait(0.02)
    return {"attempt": ctx.info.attempt}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    wf = cairn.workflow("sigterm-py", "1").task("work", work)
    w = cairn.Worker(cairn.Client(), name="sigterm-worker", claim_wait=2, drain_timeout=20).register(wf)
    w.serve()

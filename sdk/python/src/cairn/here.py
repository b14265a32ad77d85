"""run_here: a script drives its own run. It starts a run and serves its steps
in this process, its claims scoped to the run, until the run ends
(docs/SDK-PY.md, "A script drives its own run")."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
from typing import Any

from . import errors as E
from ._api.api.workers import claim_steps
from ._api.models import ClaimResponse, Run
from .client import AsyncClient, Client
from .worker import Worker
from .workflow import Workflow


class _HereWorker(Worker):
    """A Worker whose claims are scoped to one run (ClaimRequest.run), which it
    starts once registered and follows, continue-as-new included, to its end."""

    def __init__(self, client: Client | AsyncClient, wf: Workflow, input: Any, start: dict[str, Any], **opts: Any) -> None:
        super().__init__(client, **opts)
        self.register(wf)
        self._wf, self._input, self._start = wf, input, start
        self._start_codec = client.codec
        self._scope: str | None = None
        self._rescoped: asyncio.Event | None = None
        self._claiming_flag = False
        self.started: Run | None = None
        self.result: Run | None = None
        self.error: BaseException | None = None
        self._follower: asyncio.Task[None] | None = None

    # Claim_next is not scoped: a complete asking for the next lease could be
    # handed a step of another run. The worker never asks while scoped.
    @property
    def _claiming(self) -> bool:
        return self._claiming_flag and self._scope is None

    @_claiming.setter
    def _claiming(self, v: bool) -> None:
        self._claiming_flag = v

    async def _register(self, wfs: list[dict[str, Any]]) -> Any:
        r = await super()._register(wfs)
        if r is None or self.started is not None:
            return r
        self._rescoped = asyncio.Event()
        self._ac_here = AsyncClient(self._server, self._key, codec=self._start_codec)
        s = await self._ac_here.start(self._wf.name, self._input, version=self._wf.version, **self._start)
        self.started = s.run
        self._scope = s.run.id
        self._follower = asyncio.create_task(self._follow(s.run.id))
        return r

    def _rescope(self, run: str) -> None:
        if run != self._scope:
            self._scope = run
            if self._rescoped is not None:
                self._rescoped.set()

    async def _call_async(self, op: Any, **kwargs: Any) -> Any:
        if op is not claim_steps or self._scope is None or self._rescoped is None:
            return await super()._call_async(op, **kwargs)
        rescoped = self._rescoped
        rescoped.clear()
        kwargs["body"].run = self._scope
        claim = asyncio.ensure_future(super()._call_async(op, **kwargs))
        moved = asyncio.ensure_future(rescoped.wait())
        try:
            done, _ = await asyncio.wait({claim, moved}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            moved.cancel()
        if claim not in done:
            # Held on a run that ended: no lease of it was lost.
            claim.cancel()
            await asyncio.gather(claim, return_exceptions=True)
            return ClaimResponse(leases=[])
        try:
            return claim.result()
        except E.APIError as err:
            if E.reason_of(err) != E.REASON_RUN_TERMINAL:
                raise
            # The run has ended: the follower learns so and stops the worker,
            # or scopes the claims to the run it continued as.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(rescoped.wait(), 1.0)
            return ClaimResponse(leases=[])

    async def _follow(self, run: str) -> None:
        try:
            while True:
                r = await self._ac_here.wait(run, on_progress=lambda p: self._rescope(p.id))
                self._run_ended(r.id)
                nxt = r.continued_as
                if isinstance(nxt, str) and nxt:
                    self._rescope(nxt)
                    run = nxt
                    continue
                self.result = r
                return
        except Exception as err:
            self.error = err
        finally:
            if self._stopping is not None:
                self._stopping.set()


async def run_here_async(
    client: Client | AsyncClient,
    wf: Workflow,
    input: Any = None,
    *,
    correlation: str | None = None,
    idempotency_key: str | None = None,
    deadline: _dt.datetime | float | None = None,
    state: dict[str, Any] | None = None,
    priority: int | None = None,
    **worker_opts: Any,
) -> Run:
    """run_here on the running event loop. Cancelling the task stops serving
    (the steps running are drained) and cancels nothing on the server."""
    w = _HereWorker(
        client,
        wf,
        input,
        {"correlation": correlation, "idempotency_key": idempotency_key, "deadline": deadline, "state": state, "priority": priority},
        **worker_opts,
    )
    try:
        serve = asyncio.ensure_future(w.serve_async(handle_signals=False))
        try:
            await asyncio.shield(serve)
        except asyncio.CancelledError:
            w.stop()
            await serve
            raise
    finally:
        if w._follower is not None:
            w._follower.cancel()
            await asyncio.gather(w._follower, return_exceptions=True)
        ac = getattr(w, "_ac_here", None)
        if ac is not None:
            await ac.aclose()
    if w.error is not None:
        raise w.error
    if w.result is None:
        raise E.CairnError("cairn: run_here: the worker stopped before the run ended")
    return w.result


def run_here(
    client: Client | AsyncClient,
    wf: Workflow,
    input: Any = None,
    **opts: Any,
) -> Run:
    """Starts a run of wf and serves its steps in this process until the run
    ends, then returns it as Client.wait does: a run that failed is returned,
    not raised (look at its status), and a function's run that continued as
    new is followed, and served, to the last run of the chain.

    It registers wf as a Worker would (opts: the Worker's, such as name,
    concurrency, logger, codec, claim_wait, drain_timeout) and claims only steps
    of that run, each served as a Worker serves it (retries, heartbeats,
    at_most_once, durable functions, payloads by reference, the codec). The
    run is started with the start options among opts (correlation,
    idempotency_key, deadline, state, priority); with an idempotency key, a
    script run again attaches to the run it started before and drives it on.
    Steps of other runs are left to other workers, child runs included; a step
    of this run is claimed by whichever asks first, this process or another
    worker that serves wf.

    Blocking, on an event loop of its own; run_here_async on a running one.
    KeyboardInterrupt (Ctrl-C) stops serving and cancels nothing on the
    server: the run goes on with whatever worker claims its steps."""
    return asyncio.run(run_here_async(client, wf, input, **opts))

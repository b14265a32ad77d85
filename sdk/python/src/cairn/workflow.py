"""Workflow definitions: a DAG of tasks (bodies run by workers), waits
(completed by events), sleeps, maps and child runs, registered by the worker.
The builders are the Go and TypeScript SDKs'::

    triage = (
        cairn.workflow("triage", "1")
        .task("classify", classify, input={"text": "${input.body}"})
        .task("route", route, after=["classify"], retry=cairn.RetryPolicy(max_attempts=5))
        .wait("approval", "approved", after=["route"], timeout=24 * 3600)
        .sleep("cooldown", 60, after=["approval"])
    )

A definition is immutable once registered per (name, version): change
anything but handler code and give it a new version.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Union

from ._kinds import KIND_OPTIONS

if TYPE_CHECKING:
    from .function import FunctionBody, SyncFunctionBody
    from .worker import StepContext

#: A duration: seconds (a number) or a Go duration string ("30s", "1h30m").
#: The wire form is the string.
Duration = Union[float, int, str]  # noqa: UP007 (a runtime alias)

#: A step body: the step context and the rendered input in, the output (any
#: JSON value) out. A plain function runs on the worker's threads; an
#: ``async def`` on its event loop.
Handler = Callable[["StepContext", Any], Any] | Callable[["StepContext", Any], Awaitable[Any]]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def duration(d: Duration) -> str:
    """The wire form of a duration: a Go duration string."""
    if isinstance(d, str):
        return d
    if isinstance(d, bool) or not math.isfinite(d) or d < 0:
        raise ValueError(f"cairn: invalid duration {d!r}")
    ms = d * 1000
    if ms == int(ms):
        return f"{int(ms)}ms"
    return f"{round(d * 1_000_000)}us"


@dataclass
class RetryPolicy:
    """How a failed task step is retried. None fields take the engine's defaults
    (3 attempts, 1s initial backoff doubling up to 5m)."""

    max_attempts: int | None = None
    initial_backoff: Duration | None = None
    max_backoff: Duration | None = None
    multiplier: float | None = None
    #: Failure classes never retried.
    non_retryable: list[str] = field(default_factory=list)
    #: At-most-once only: classes retried even after the body started.
    retry_after_start: list[str] = field(default_factory=list)

    def wire(self) -> dict[str, Any]:
        r: dict[str, Any] = {}
        if self.max_attempts is not None:
            r["max_attempts"] = self.max_attempts
        if self.initial_backoff is not None:
            r["initial_backoff"] = duration(self.initial_backoff)
        if self.max_backoff is not None:
            r["max_backoff"] = duration(self.max_backoff)
        if self.multiplier is not None:
            r["multiplier"] = self.multiplier
        if self.non_retryable:
            r["non_retryable"] = list(self.non_retryable)
        if self.retry_after_start:
            r["retry_after_start"] = list(self.retry_after_start)
        return r


@dataclass
class Concurrency:
    """At most limit attempts hold a lease at once among those whose key
    template (e.g. "${input.customer}") renders equal; no key: one limit."""

    limit: int
    key: str = ""

    def wire(self) -> dict[str, Any]:
        c: dict[str, Any] = {"limit": self.limit}
        if self.key:
            c["key"] = self.key
        return c


@dataclass
class Cache:
    """A task step's result cache: an attempt whose key (a CEL expression over
    the step's rendered input, as input; "" for the whole input) has an entry
    younger than ttl (default 24h, at most 720h) is completed from it without a
    worker, marked cached; a miss runs the step and its output (up to 64 KiB)
    becomes the entry."""

    key: str = ""
    ttl: Duration | None = None

    def wire(self) -> dict[str, Any]:
        c: dict[str, Any] = {}
        if self.key:
            c["key"] = self.key
        if self.ttl is not None:
            c["ttl"] = duration(self.ttl)
        return c


@dataclass
class RateLimit:
    """At most limit attempts handed out per period per rendered key, evenly
    spaced unless burst > 1; attempts beyond wait."""

    limit: int
    period: Duration
    key: str = ""
    burst: int = 0

    def wire(self) -> dict[str, Any]:
        r: dict[str, Any] = {"limit": self.limit, "period": duration(self.period)}
        if self.key:
            r["key"] = self.key
        if self.burst:
            r["burst"] = self.burst
        return r


_COMMON_FIELDS = frozenset({"id", "kind", "after", "input", "when"})


def check_kind_options(step: dict[str, Any], where: str) -> None:
    """Refuses a step that sets an option its kind does not take, with the
    engine's message ("retry applies to task and map steps only"): the table
    is the engine's, generated from the spec (_kinds.py)."""
    kind = step.get("kind", "task")
    takes = KIND_OPTIONS.get(kind)
    if takes is None:
        raise ValueError(f"{where}: unknown kind {kind}")
    for f in step:
        if f in _COMMON_FIELDS or f in takes:
            continue
        takers = [k for k, fs in KIND_OPTIONS.items() if f in fs]
        names = takers[0] if len(takers) < 2 else ", ".join(takers[:-1]) + " and " + takers[-1]
        raise ValueError(f"{where}: {f} applies to {names} steps only")


def _sort_keys(v: Any) -> Any:
    """A JSON value with every object's keys sorted, as Go encodes maps."""
    if isinstance(v, list):
        return [_sort_keys(x) for x in v]
    if isinstance(v, dict):
        return {k: _sort_keys(v[k]) for k in sorted(v)}
    return v


class Workflow:
    """A workflow definition and the handlers of its task and map steps. Build
    one with :func:`workflow` and chain task, wait, sleep, map, child and
    on_failure."""

    def __init__(
        self,
        name: str,
        version: str,
        *,
        description: str = "",
        deadline: Duration | None = None,
        concurrency: list[Concurrency] | None = None,
        budget: dict[str, Any] | None = None,
        reducers: dict[str, str] | None = None,
        singleton: dict[str, str] | None = None,
        cancel_on: list[dict[str, Any]] | None = None,
        debounce: dict[str, Any] | None = None,
        batch: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.description = description
        self.deadline = deadline
        #: Default budget of each run ({"cost_usd", "tokens", "counters"}): a run whose
        #: usage goes over it fails with class budget_exceeded.
        self.budget = dict(budget) if budget else None
        #: How a state key folds what steps write (default "replace"): "append", "sum",
        #: "max", "min", "merge". Parallel writers of the key then all count.
        self.reducers = dict(reducers or {})
        #: One running run per rendered key ({"key": template, "mode": "skip" | "cancel_running"}).
        self.singleton = dict(singleton) if singleton else None
        #: Published events that cancel a running run: [{"event", "if"?, "timeout"?}].
        self.cancel_on = [dict(c) for c in cancel_on or []]
        #: Triggered runs wait for a quiet spell per key: {"key"?, "period", "timeout"?}.
        self.debounce = dict(debounce) if debounce else None
        #: Triggered events gather per key into list-input runs: {"key"?, "max_size", "timeout"}.
        self.batch = dict(batch) if batch else None
        self.concurrency = list(concurrency or [])
        self.handlers: dict[str, Handler] = {}
        self._steps: list[dict[str, Any]] = []
        self._on_failure: list[dict[str, Any]] = []
        self._encrypted = False
        self._clear: list[str] = []
        self._on: list[dict[str, str]] = []

    def encrypted(self, *clear: str) -> Workflow:
        """Declares that the workflow's payloads are encrypted on the client
        (client-side encryption: a client and a worker given a keyring): the
        server sees them as opaque values, and refuses at registration a
        template that reads inside one. The top-level input and state keys in
        clear stay unencrypted, so templates may read inside them."""
        self._encrypted = True
        self._clear = list(clear)
        return self

    @property
    def clear(self) -> list[str]:
        """The top-level input and state keys an encrypted workflow leaves in the clear."""
        return list(self._clear)

    def task(self, id: str, handler: Handler, **opts: Any) -> Workflow:
        """A step whose body runs on a worker. Options: after, input, when, retry,
        timeout, at_most_once, max_deliveries, concurrency, rate_limit, priority,
        requires_labels, cache (a Cache, or {"key", "ttl"}),
        next (routes back to an earlier step: ``[("draft", "!steps.review.output.ok")]``,
        tried in order when the step completes) and max_visits (default 10; past it
        the run fails with class loop_limit)."""
        self._handler(id, handler)
        # kind is left out for a task (the default), as the Go SDK does.
        return self._add({"id": id}, opts, self._steps)

    def function(self, id: str, body: FunctionBody | SyncFunctionBody, **opts: Any) -> Workflow:
        """A durable function step: body (``async def body(fc, input)``, or a
        plain ``def`` whose operations block) runs on a worker under a lease
        like a task's, and its operations are checkpointed (cairn.function,
        docs/FUNCTIONS.md). Options: after, input, when, retry,
        timeout, max_deliveries, concurrency, rate_limit, priority."""
        from .function import add_function

        return add_function(self, id, body, opts)

    def remote_task(self, id: str, **opts: Any) -> Workflow:
        """A task whose body other workers serve (another SDK, another
        deployment): declared so this worker registers the same definition,
        and failed as unservable if offered here (the engine then offers it to
        another worker without spending retry budget)."""
        return self._add({"id": id}, opts, self._steps)

    def wait(self, id: str, event: str, **opts: Any) -> Workflow:
        """A step completed by the event named event sent to the run; its
        payload is the output. timeout bounds the wait (class timeout). An
        update of that name (Client.send_update) is answered by the output of
        the step answer names (after the wait), or the wait's own."""
        return self._add({"id": id, "kind": "wait", "event": event}, opts, self._steps)

    def wait_any(self, id: str, events: list[str], **opts: Any) -> Workflow:
        """A step completed by the first of several events sent to the run
        (matching if_, a CEL condition over event, input, state, steps and
        run); its output is {event, id, payload}."""
        return self._add({"id": id, "kind": "wait", "events": list(events)}, opts, self._steps)

    def on(self, event: str, cond: str = "") -> Workflow:
        """A trigger: an event named event published (Client.publish) starts
        a run of the workflow's newest registered version, with the payload as
        input, when cond (CEL over event: name, id, payload) holds; "" for
        every event of the name."""
        self._on.append({"event": event, "if": cond} if cond else {"event": event})
        return self

    def sleep(self, id: str, d: Duration, **opts: Any) -> Workflow:
        """A step that waits d (output null)."""
        return self._add({"id": id, "kind": "sleep", "duration": duration(d)}, opts, self._steps)

    def map(self, id: str, items: str, handler: Handler, **opts: Any) -> Workflow:
        """A map step: handler runs once per element of the array items (a CEL
        expression) renders, at most max_concurrency at a time; the output is
        the outputs in input order. The input template sees item and index;
        without one a body's input is its element."""
        self._handler(id, handler)
        return self._add({"id": id, "kind": "map", "items": items}, opts, self._steps)

    def child(self, id: str, workflow: str, **opts: Any) -> Workflow:
        """A step that starts a run of workflow and ends with it (its output, or its error)."""
        return self._add({"id": id, "kind": "child", "workflow": workflow}, opts, self._steps)

    def on_failure(self, id: str, handler: Handler, **opts: Any) -> Workflow:
        """A compensation step (saga): a task run only when the run fails, after
        the on_failure steps in after."""
        self._handler(id, handler)
        return self._add({"id": id}, opts, self._on_failure)

    def _handler(self, id: str, handler: Handler) -> None:
        if not callable(handler):
            raise TypeError(f"cairn: workflow {self.name}: step {id}: the handler is not callable")
        self.handlers[id] = handler

    def _add(self, s: dict[str, Any], o: dict[str, Any], into: list[dict[str, Any]]) -> Workflow:
        where = f"cairn: workflow {self.name}: step {s['id']}"
        if any(x["id"] == s["id"] for x in self._steps + self._on_failure):
            raise ValueError(f"{where}: defined twice")
        known = {
            "after",
            "input",
            "when",
            "retry",
            "timeout",
            "at_most_once",
            "max_deliveries",
            "concurrency",
            "rate_limit",
            "priority",
            "requires_labels",
            "cache",
            "next",
            "max_visits",
            "max_concurrency",
            "tolerated_failures",
            "tolerated_failure_percent",
            "child_version",
            "if_",
            "answer",
        }
        unknown = set(o) - known
        if unknown:
            raise TypeError(f"{where}: unknown option(s) {', '.join(sorted(unknown))}")
        if o.get("after"):
            s["after"] = list(o["after"])
        if o.get("input") is not None:
            s["input"] = _sort_keys(o["input"])
        if o.get("when"):
            s["when"] = o["when"]
        if o.get("retry") is not None:
            r = o["retry"]
            s["retry"] = r.wire() if isinstance(r, RetryPolicy) else dict(r)
        if o.get("timeout") is not None:
            s["wait_timeout" if s.get("kind") == "wait" else "timeout"] = duration(o["timeout"])
        if o.get("at_most_once"):
            s["delivery"] = "at_most_once"
        for f in ("max_deliveries", "priority", "max_visits", "max_concurrency", "tolerated_failures", "tolerated_failure_percent"):
            if o.get(f) is not None:
                s[f] = o[f]
        if o.get("concurrency") is not None:
            c = o["concurrency"]
            s["concurrency"] = c.wire() if isinstance(c, Concurrency) else dict(c)
        if o.get("rate_limit") is not None:
            r = o["rate_limit"]
            s["rate_limit"] = r.wire() if isinstance(r, RateLimit) else dict(r)
        if o.get("child_version"):
            s["child_version"] = o["child_version"]
        if o.get("requires_labels"):
            s["requires_labels"] = dict(o["requires_labels"])
        if o.get("cache") is not None:
            c = o["cache"]
            s["cache"] = c.wire() if isinstance(c, Cache) else Cache(**c).wire()
        if o.get("if_"):
            s["if"] = o["if_"]
        if o.get("answer"):
            s["answer"] = o["answer"]
        if o.get("next"):
            # [(to, if), ...] or [{"to": ..., "if": ...}, ...]
            s["next"] = [dict(r) if isinstance(r, dict) else {"to": r[0], "if": r[1]} for r in o["next"]]
        if "priority" in s and not -100 <= s["priority"] <= 100:
            raise ValueError(f"{where}: priority {s['priority']} is outside [-100, 100]")
        check_kind_options(s, where)
        into.append(s)
        return self

    def definition(self) -> dict[str, Any]:
        """The definition the worker registers (the API's Workflow), as JSON."""
        d: dict[str, Any] = {"name": self.name, "version": self.version, "steps": [dict(s) for s in self._steps]}
        if self.description:
            d["description"] = self.description
        if self.deadline is not None:
            d["deadline"] = duration(self.deadline)
        if self.concurrency:
            d["concurrency"] = [c.wire() for c in self.concurrency]
        if self.budget:
            d["budget"] = dict(self.budget)
        if self.reducers:
            d["reducers"] = dict(self.reducers)
        if self.singleton:
            d["singleton"] = dict(self.singleton)
        if self.cancel_on:
            d["cancel_on"] = [
                {**c, "timeout": duration(c["timeout"])} if c.get("timeout") is not None else dict(c) for c in self.cancel_on
            ]
        for name, opt in (("debounce", self.debounce), ("batch", self.batch)):
            if opt:
                d[name] = {k: duration(v) if k in ("period", "timeout") else v for k, v in opt.items()}
        if self._on_failure:
            d["on_failure"] = [dict(s) for s in self._on_failure]
        if self._on:
            d["on"] = [dict(t) for t in self._on]
        if self._encrypted:
            d["encrypted"] = True
            if self._clear:
                d["clear"] = list(self._clear)
        return d


def _params_of(f: Callable[_P, Any]) -> Callable[[Callable[..., _R]], Callable[_P, _R]]:
    """Gives the function it decorates f's parameters, for type checkers and help()."""

    def give(g: Callable[..., _R]) -> Callable[_P, _R]:
        sig = inspect.signature(f).replace(return_annotation=inspect.signature(g).return_annotation)
        setattr(g, "__signature__", sig)  # noqa: B010
        return g

    return give


@_params_of(Workflow)
def workflow(*args: Any, **kwargs: Any) -> Workflow:
    """Starts the definition of workflow name at version (the parameters of :class:`Workflow`)."""
    return Workflow(*args, **kwargs)

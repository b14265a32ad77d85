from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.step_delivery import StepDelivery
from ..models.step_kind import StepKind
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.concurrency_limit import ConcurrencyLimit
    from ..models.rate_limit import RateLimit
    from ..models.retry_policy import RetryPolicy
    from ..models.route import Route
    from ..models.step_cache import StepCache
    from ..models.step_requires_labels import StepRequiresLabels


T = TypeVar("T", bound="Step")


@_attrs_define
class Step:
    """
    Attributes:
        id (str): Unique within the workflow; a CEL identifier-like name.
        after (list[str] | Unset): Steps that must complete before this one starts.
        answer (str | Unset): Wait steps: the step, after this one, whose output answers an update the wait takes (POST
            /runs/{run}/updates). Unset: the wait's own output (the update's input) answers.
        cache (StepCache | Unset):
        child_version (str | Unset): Child steps: the child workflow's version (default: its newest when the step
            starts).
        concurrency (ConcurrencyLimit | Unset):
        delivery (StepDelivery | Unset): Task delivery guarantee (default at_least_once).
        duration (str | Unset): Sleep steps: how long to sleep.
        event (str | Unset): Wait steps: the event name that resumes the wait (its payload is the step's output).
        events (list[str] | Unset): Wait steps, instead of event: the wait resumes on the first of these events
            (matching if) to come; its output is {event, id, payload}, event naming which came.
        if_ (str | Unset): Wait steps: a CEL condition over event (name, id, payload), input, state, steps.<id>.output
            and run (bare, or as ${expr}): the wait takes only the events for which it is true; the others are left for
            other waits, or kept. An event it cannot be evaluated on (a missing field, not a bool) is not taken.
        input_ (Any | Unset): Input template: JSON whose strings may hold CEL expressions as ${expr} over input, state,
            steps.<id>.output and run.
        items (str | Unset): Map steps: a CEL expression (bare or as ${expr}) that renders the array to map over; the
            step's body runs once per element, its input template sees item and index.
        kind (StepKind | Unset): task (default), wait, sleep, map or child. Which optional fields each kind takes is
            x-kind-options of this schema.
        max_concurrency (int | Unset): Map steps: most items running at once (default 100).
        max_deliveries (int | Unset): Lost leases before the step is dead-lettered (default 5).
        max_visits (int | Unset): Task and function steps with next: the most visits this step may make (default 10); a
            route past it fails the run with class loop_limit.
        next_ (list[Route] | Unset): Task and function steps: routes back to an earlier step, tried in order when this
            step completes; the first whose if holds runs its to step and every step between again (a new visit). None
            holds: the run goes on.
        priority (int | Unset): Task steps: overrides the run's priority for this step (higher is offered first).
        rate_limit (RateLimit | Unset):
        requires_labels (StepRequiresLabels | Unset): Task, map and function steps: offered only to workers registered
            with every one of these labels (key: value, as the worker's labels), such as {"gpu": "true", "region": "eu"}. A
            run whose ready step no live worker matches says so (no_live_worker).
        retry (RetryPolicy | Unset):
        timeout (str | Unset): Longest one attempt of a task may run, heartbeats or not (default: none).
        tolerated_failure_percent (float | Unset): Map steps: the share of items, in percent, that may fail without
            failing the map (the larger of this and tolerated_failures applies).
        tolerated_failures (int | Unset): Map steps: items that may fail (after their retries) without failing the map;
            their outputs are null.
        wait_timeout (str | Unset): Wait steps: fail the step with class timeout after this long (default: wait
            forever).
        when (str | Unset): A CEL condition over input, state, steps.<id>.output and run (bare, or as ${expr}),
            evaluated when the step's dependencies are done. False: the step is skipped. A step whose dependencies were all
            skipped is skipped too; a step with at least one completed dependency runs (a join after branches). Skipped
            steps have no output: test with has(steps.<id>).
        workflow (str | Unset): Child steps: the workflow the child run runs.
    """

    id: str
    after: list[str] | Unset = UNSET
    answer: str | Unset = UNSET
    cache: StepCache | Unset = UNSET
    child_version: str | Unset = UNSET
    concurrency: ConcurrencyLimit | Unset = UNSET
    delivery: StepDelivery | Unset = UNSET
    duration: str | Unset = UNSET
    event: str | Unset = UNSET
    events: list[str] | Unset = UNSET
    if_: str | Unset = UNSET
    input_: Any | Unset = UNSET
    items: str | Unset = UNSET
    kind: StepKind | Unset = UNSET
    max_concurrency: int | Unset = UNSET
    max_deliveries: int | Unset = UNSET
    max_visits: int | Unset = UNSET
    next_: list[Route] | Unset = UNSET
    priority: int | Unset = UNSET
    rate_limit: RateLimit | Unset = UNSET
    requires_labels: StepRequiresLabels | Unset = UNSET
    retry: RetryPolicy | Unset = UNSET
    timeout: str | Unset = UNSET
    tolerated_failure_percent: float | Unset = UNSET
    tolerated_failures: int | Unset = UNSET
    wait_timeout: str | Unset = UNSET
    when: str | Unset = UNSET
    workflow: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        after: list[str] | Unset = UNSET
        if not isinstance(self.after, Unset):
            after = self.after

        answer = self.answer

        cache: dict[str, Any] | Unset = UNSET
        if not isinstance(self.cache, Unset):
            cache = self.cache.to_dict()

        child_version = self.child_version

        concurrency: dict[str, Any] | Unset = UNSET
        if not isinstance(self.concurrency, Unset):
            concurrency = self.concurrency.to_dict()

        delivery: str | Unset = UNSET
        if not isinstance(self.delivery, Unset):
            delivery = self.delivery.value

        duration = self.duration

        event = self.event

        events: list[str] | Unset = UNSET
        if not isinstance(self.events, Unset):
            events = self.events

        if_ = self.if_

        input_ = self.input_

        items = self.items

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value

        max_concurrency = self.max_concurrency

        max_deliveries = self.max_deliveries

        max_visits = self.max_visits

        next_: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.next_, Unset):
            next_ = []
            for next_item_data in self.next_:
                next_item = next_item_data.to_dict()
                next_.append(next_item)

        priority = self.priority

        rate_limit: dict[str, Any] | Unset = UNSET
        if not isinstance(self.rate_limit, Unset):
            rate_limit = self.rate_limit.to_dict()

        requires_labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.requires_labels, Unset):
            requires_labels = self.requires_labels.to_dict()

        retry: dict[str, Any] | Unset = UNSET
        if not isinstance(self.retry, Unset):
            retry = self.retry.to_dict()

        timeout = self.timeout

        tolerated_failure_percent = self.tolerated_failure_percent

        tolerated_failures = self.tolerated_failures

        wait_timeout = self.wait_timeout

        when = self.when

        workflow = self.workflow

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
            }
        )
        if after is not UNSET:
            field_dict["after"] = after
        if answer is not UNSET:
            field_dict["answer"] = answer
        if cache is not UNSET:
            field_dict["cache"] = cache
        if child_version is not UNSET:
            field_dict["child_version"] = child_version
        if concurrency is not UNSET:
            field_dict["concurrency"] = concurrency
        if delivery is not UNSET:
            field_dict["delivery"] = delivery
        if duration is not UNSET:
            field_dict["duration"] = duration
        if event is not UNSET:
            field_dict["event"] = event
        if events is not UNSET:
            field_dict["events"] = events
        if if_ is not UNSET:
            field_dict["if"] = if_
        if input_ is not UNSET:
            field_dict["input"] = input_
        if items is not UNSET:
            field_dict["items"] = items
        if kind is not UNSET:
            field_dict["kind"] = kind
        if max_concurrency is not UNSET:
            field_dict["max_concurrency"] = max_concurrency
        if max_deliveries is not UNSET:
            field_dict["max_deliveries"] = max_deliveries
        if max_visits is not UNSET:
            field_dict["max_visits"] = max_visits
        if next_ is not UNSET:
            field_dict["next"] = next_
        if priority is not UNSET:
            field_dict["priority"] = priority
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if requires_labels is not UNSET:
            field_dict["requires_labels"] = requires_labels
        if retry is not UNSET:
            field_dict["retry"] = retry
        if timeout is not UNSET:
            field_dict["timeout"] = timeout
        if tolerated_failure_percent is not UNSET:
            field_dict["tolerated_failure_percent"] = tolerated_failure_percent
        if tolerated_failures is not UNSET:
            field_dict["tolerated_failures"] = tolerated_failures
        if wait_timeout is not UNSET:
            field_dict["wait_timeout"] = wait_timeout
        if when is not UNSET:
            field_dict["when"] = when
        if workflow is not UNSET:
            field_dict["workflow"] = workflow

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.concurrency_limit import ConcurrencyLimit  # noqa: PLC0415
        from ..models.rate_limit import RateLimit  # noqa: PLC0415
        from ..models.retry_policy import RetryPolicy  # noqa: PLC0415
        from ..models.route import Route  # noqa: PLC0415
        from ..models.step_cache import StepCache  # noqa: PLC0415
        from ..models.step_requires_labels import StepRequiresLabels  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        after = cast(list[str], d.pop("after", UNSET))

        answer = d.pop("answer", UNSET)

        _cache = d.pop("cache", UNSET)
        cache: StepCache | Unset
        if isinstance(_cache, Unset):
            cache = UNSET
        else:
            cache = StepCache.from_dict(_cache)

        child_version = d.pop("child_version", UNSET)

        _concurrency = d.pop("concurrency", UNSET)
        concurrency: ConcurrencyLimit | Unset
        if isinstance(_concurrency, Unset):
            concurrency = UNSET
        else:
            concurrency = ConcurrencyLimit.from_dict(_concurrency)

        _delivery = d.pop("delivery", UNSET)
        delivery: StepDelivery | Unset
        if isinstance(_delivery, Unset):
            delivery = UNSET
        else:
            delivery = StepDelivery(_delivery)

        duration = d.pop("duration", UNSET)

        event = d.pop("event", UNSET)

        events = cast(list[str], d.pop("events", UNSET))

        if_ = d.pop("if", UNSET)

        input_ = d.pop("input", UNSET)

        items = d.pop("items", UNSET)

        _kind = d.pop("kind", UNSET)
        kind: StepKind | Unset
        if isinstance(_kind, Unset):
            kind = UNSET
        else:
            kind = StepKind(_kind)

        max_concurrency = d.pop("max_concurrency", UNSET)

        max_deliveries = d.pop("max_deliveries", UNSET)

        max_visits = d.pop("max_visits", UNSET)

        _next_ = d.pop("next", UNSET)
        next_: list[Route] | Unset = UNSET
        if _next_ is not UNSET:
            next_ = []
            for next_item_data in _next_:
                next_item = Route.from_dict(next_item_data)

                next_.append(next_item)

        priority = d.pop("priority", UNSET)

        _rate_limit = d.pop("rate_limit", UNSET)
        rate_limit: RateLimit | Unset
        if isinstance(_rate_limit, Unset):
            rate_limit = UNSET
        else:
            rate_limit = RateLimit.from_dict(_rate_limit)

        _requires_labels = d.pop("requires_labels", UNSET)
        requires_labels: StepRequiresLabels | Unset
        if isinstance(_requires_labels, Unset):
            requires_labels = UNSET
        else:
            requires_labels = StepRequiresLabels.from_dict(_requires_labels)

        _retry = d.pop("retry", UNSET)
        retry: RetryPolicy | Unset
        if isinstance(_retry, Unset):
            retry = UNSET
        else:
            retry = RetryPolicy.from_dict(_retry)

        timeout = d.pop("timeout", UNSET)

        tolerated_failure_percent = d.pop("tolerated_failure_percent", UNSET)

        tolerated_failures = d.pop("tolerated_failures", UNSET)

        wait_timeout = d.pop("wait_timeout", UNSET)

        when = d.pop("when", UNSET)

        workflow = d.pop("workflow", UNSET)

        step = cls(
            id=id,
            after=after,
            answer=answer,
            cache=cache,
            child_version=child_version,
            concurrency=concurrency,
            delivery=delivery,
            duration=duration,
            event=event,
            events=events,
            if_=if_,
            input_=input_,
            items=items,
            kind=kind,
            max_concurrency=max_concurrency,
            max_deliveries=max_deliveries,
            max_visits=max_visits,
            next_=next_,
            priority=priority,
            rate_limit=rate_limit,
            requires_labels=requires_labels,
            retry=retry,
            timeout=timeout,
            tolerated_failure_percent=tolerated_failure_percent,
            tolerated_failures=tolerated_failures,
            wait_timeout=wait_timeout,
            when=when,
            workflow=workflow,
        )

        return step

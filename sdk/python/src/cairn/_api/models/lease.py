from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.lease_delivery import LeaseDelivery
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.lease_state import LeaseState
    from ..models.lease_steps import LeaseSteps
    from ..models.operation import Operation


T = TypeVar("T", bound="Lease")


@_attrs_define
class Lease:
    """
    Attributes:
        attempt (int): Attempt number, from 1.
        delivery (LeaseDelivery):
        expires_at (datetime.datetime): The lease expires then unless a heartbeat extends it.
        heartbeat_ms (int):
        id (str): Opaque lease id for started, heartbeat, complete and fail.
        idempotency_key (str): Stable across every attempt of this step of this run: pass it to side-effecting calls.
        input_ (Any): The step's rendered input.
        lease_ttl_ms (int):
        run (str):
        state (LeaseState): The run state when the lease was made.
        step (str):
        steps (LeaseSteps): Outputs of the steps this one depends on (transitively), by step id.
        traceparent (str): W3C traceparent of the step span the engine opened.
        version (str):
        workflow (str):
        correlation (str | Unset):
        history (list[Operation] | Unset): For a function step: the operations its body checkpointed in earlier
            attempts, in order; replay returns their results.
        interrupt (Any | Unset): With resumed: the payload the step last interrupted with.
        item (int | Unset): For an item of a map step (step names the map step): the item's index in the items array.
        resume (Any | Unset): With resumed: the value the step was resumed with.
        resumed (bool | Unset): The step was interrupted and resumed: resume holds the value it was resumed with,
            interrupt the payload it interrupted with (on every attempt until it completes or interrupts again).
        timeout_at (datetime.datetime | Unset): The attempt fails with class timeout then, heartbeats or not.
    """

    attempt: int
    delivery: LeaseDelivery
    expires_at: datetime.datetime
    heartbeat_ms: int
    id: str
    idempotency_key: str
    input_: Any
    lease_ttl_ms: int
    run: str
    state: LeaseState
    step: str
    steps: LeaseSteps
    traceparent: str
    version: str
    workflow: str
    correlation: str | Unset = UNSET
    history: list[Operation] | Unset = UNSET
    interrupt: Any | Unset = UNSET
    item: int | Unset = UNSET
    resume: Any | Unset = UNSET
    resumed: bool | Unset = UNSET
    timeout_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        delivery = self.delivery.value

        expires_at = self.expires_at.isoformat()

        heartbeat_ms = self.heartbeat_ms

        id = self.id

        idempotency_key = self.idempotency_key

        input_ = self.input_

        lease_ttl_ms = self.lease_ttl_ms

        run = self.run

        state = self.state.to_dict()

        step = self.step

        steps = self.steps.to_dict()

        traceparent = self.traceparent

        version = self.version

        workflow = self.workflow

        correlation = self.correlation

        history: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.history, Unset):
            history = []
            for history_item_data in self.history:
                history_item = history_item_data.to_dict()
                history.append(history_item)

        interrupt = self.interrupt

        item = self.item

        resume = self.resume

        resumed = self.resumed

        timeout_at: str | Unset = UNSET
        if not isinstance(self.timeout_at, Unset):
            timeout_at = self.timeout_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "attempt": attempt,
                "delivery": delivery,
                "expires_at": expires_at,
                "heartbeat_ms": heartbeat_ms,
                "id": id,
                "idempotency_key": idempotency_key,
                "input": input_,
                "lease_ttl_ms": lease_ttl_ms,
                "run": run,
                "state": state,
                "step": step,
                "steps": steps,
                "traceparent": traceparent,
                "version": version,
                "workflow": workflow,
            }
        )
        if correlation is not UNSET:
            field_dict["correlation"] = correlation
        if history is not UNSET:
            field_dict["history"] = history
        if interrupt is not UNSET:
            field_dict["interrupt"] = interrupt
        if item is not UNSET:
            field_dict["item"] = item
        if resume is not UNSET:
            field_dict["resume"] = resume
        if resumed is not UNSET:
            field_dict["resumed"] = resumed
        if timeout_at is not UNSET:
            field_dict["timeout_at"] = timeout_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lease_state import LeaseState  # noqa: PLC0415
        from ..models.lease_steps import LeaseSteps  # noqa: PLC0415
        from ..models.operation import Operation  # noqa: PLC0415

        d = dict(src_dict)
        attempt = d.pop("attempt")

        delivery = LeaseDelivery(d.pop("delivery"))

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        heartbeat_ms = d.pop("heartbeat_ms")

        id = d.pop("id")

        idempotency_key = d.pop("idempotency_key")

        input_ = d.pop("input")

        lease_ttl_ms = d.pop("lease_ttl_ms")

        run = d.pop("run")

        state = LeaseState.from_dict(d.pop("state"))

        step = d.pop("step")

        steps = LeaseSteps.from_dict(d.pop("steps"))

        traceparent = d.pop("traceparent")

        version = d.pop("version")

        workflow = d.pop("workflow")

        correlation = d.pop("correlation", UNSET)

        _history = d.pop("history", UNSET)
        history: list[Operation] | Unset = UNSET
        if _history is not UNSET:
            history = []
            for history_item_data in _history:
                history_item = Operation.from_dict(history_item_data)

                history.append(history_item)

        interrupt = d.pop("interrupt", UNSET)

        item = d.pop("item", UNSET)

        resume = d.pop("resume", UNSET)

        resumed = d.pop("resumed", UNSET)

        _timeout_at = d.pop("timeout_at", UNSET)
        timeout_at: datetime.datetime | Unset
        if isinstance(_timeout_at, Unset):
            timeout_at = UNSET
        else:
            timeout_at = datetime.datetime.fromisoformat(_timeout_at)

        lease = cls(
            attempt=attempt,
            delivery=delivery,
            expires_at=expires_at,
            heartbeat_ms=heartbeat_ms,
            id=id,
            idempotency_key=idempotency_key,
            input_=input_,
            lease_ttl_ms=lease_ttl_ms,
            run=run,
            state=state,
            step=step,
            steps=steps,
            traceparent=traceparent,
            version=version,
            workflow=workflow,
            correlation=correlation,
            history=history,
            interrupt=interrupt,
            item=item,
            resume=resume,
            resumed=resumed,
            timeout_at=timeout_at,
        )

        return lease

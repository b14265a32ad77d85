from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budget import Budget
    from ..models.start_request_attributes import StartRequestAttributes
    from ..models.start_request_state import StartRequestState


T = TypeVar("T", bound="StartRequest")


@_attrs_define
class StartRequest:
    """
    Attributes:
        workflow (str): Workflow name.
        attributes (StartRequestAttributes | Unset): Search attributes: name to a string, number, boolean or RFC 3339
            time (at most 16; names a letter then letters, digits, _ . -; strings at most 256 bytes). GET /runs filters on
            them (attr).
        budget (Budget | Unset):
        correlation (str | Unset): Free correlation id, visible to templates as run.correlation.
        deadline (datetime.datetime | Unset): The run times out at this time (default: the workflow's deadline, if any).
        idempotency_key (str | Unset): Starting twice with the same key (per workflow) returns the first run.
        input_ (Any | Unset): The run's input, any JSON value.
        priority (int | Unset): The run's priority (default 0): of the steps ready at once, higher priorities are
            offered first; a step's own priority overrides it. A step that waits gains one point per second (engine
            PriorityAging), so none starves.
        state (StartRequestState | Unset): Initial run state.
        version (str | Unset): Version to run; default the newest registered.
    """

    workflow: str
    attributes: StartRequestAttributes | Unset = UNSET
    budget: Budget | Unset = UNSET
    correlation: str | Unset = UNSET
    deadline: datetime.datetime | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    input_: Any | Unset = UNSET
    priority: int | Unset = UNSET
    state: StartRequestState | Unset = UNSET
    version: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        workflow = self.workflow

        attributes: dict[str, Any] | Unset = UNSET
        if not isinstance(self.attributes, Unset):
            attributes = self.attributes.to_dict()

        budget: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budget, Unset):
            budget = self.budget.to_dict()

        correlation = self.correlation

        deadline: str | Unset = UNSET
        if not isinstance(self.deadline, Unset):
            deadline = self.deadline.isoformat()

        idempotency_key = self.idempotency_key

        input_ = self.input_

        priority = self.priority

        state: dict[str, Any] | Unset = UNSET
        if not isinstance(self.state, Unset):
            state = self.state.to_dict()

        version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "workflow": workflow,
            }
        )
        if attributes is not UNSET:
            field_dict["attributes"] = attributes
        if budget is not UNSET:
            field_dict["budget"] = budget
        if correlation is not UNSET:
            field_dict["correlation"] = correlation
        if deadline is not UNSET:
            field_dict["deadline"] = deadline
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if input_ is not UNSET:
            field_dict["input"] = input_
        if priority is not UNSET:
            field_dict["priority"] = priority
        if state is not UNSET:
            field_dict["state"] = state
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.budget import Budget  # noqa: PLC0415
        from ..models.start_request_attributes import StartRequestAttributes  # noqa: PLC0415
        from ..models.start_request_state import StartRequestState  # noqa: PLC0415

        d = dict(src_dict)
        workflow = d.pop("workflow")

        _attributes = d.pop("attributes", UNSET)
        attributes: StartRequestAttributes | Unset
        if isinstance(_attributes, Unset):
            attributes = UNSET
        else:
            attributes = StartRequestAttributes.from_dict(_attributes)

        _budget = d.pop("budget", UNSET)
        budget: Budget | Unset
        if isinstance(_budget, Unset):
            budget = UNSET
        else:
            budget = Budget.from_dict(_budget)

        correlation = d.pop("correlation", UNSET)

        _deadline = d.pop("deadline", UNSET)
        deadline: datetime.datetime | Unset
        if isinstance(_deadline, Unset):
            deadline = UNSET
        else:
            deadline = datetime.datetime.fromisoformat(_deadline)

        idempotency_key = d.pop("idempotency_key", UNSET)

        input_ = d.pop("input", UNSET)

        priority = d.pop("priority", UNSET)

        _state = d.pop("state", UNSET)
        state: StartRequestState | Unset
        if isinstance(_state, Unset):
            state = UNSET
        else:
            state = StartRequestState.from_dict(_state)

        version = d.pop("version", UNSET)

        start_request = cls(
            workflow=workflow,
            attributes=attributes,
            budget=budget,
            correlation=correlation,
            deadline=deadline,
            idempotency_key=idempotency_key,
            input_=input_,
            priority=priority,
            state=state,
            version=version,
        )

        return start_request

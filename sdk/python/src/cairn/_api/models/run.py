from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budget import Budget
    from ..models.compensation import Compensation
    from ..models.error_info import ErrorInfo
    from ..models.event_ref import EventRef
    from ..models.run_attributes import RunAttributes
    from ..models.run_state import RunState
    from ..models.step_view import StepView
    from ..models.usage import Usage


T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str):
        pending_events (list[str]): Events received that no wait has consumed yet; empty when none.
        state (RunState):
        status (RunStatus):
        steps (list[StepView]):
        steps_done (int): Declared steps completed or skipped (a map step counts once, compensation steps not).
        steps_total (int): The steps the definition declares (a map step counts once, compensation steps not).
        updated_at (datetime.datetime):
        usage (Usage):
        version (str):
        workflow (str):
        attributes (RunAttributes | Unset): The run's search attributes: set at start and by steps' completes.
        budget (Budget | Unset):
        compensation (Compensation | Unset):
        continued_as (str | Unset): A function's run that continued as new: the run it started (its output is
            {"continued_as": that id}).
        continued_from (str | Unset): The run whose function continued as this one.
        correlation (str | Unset):
        deadline (datetime.datetime | Unset):
        ended_at (datetime.datetime | Unset):
        error (ErrorInfo | Unset):
        event (EventRef | Unset):
        input_ (Any | Unset):
        no_live_worker (bool | Unset): True while a task step is ready and no worker seen alive (see the workers list)
            serves this workflow@version: the run waits for one to start.
        output (Any | Unset): The only sink step's output, or an object of every sink's output by step id.
        parent (str | Unset): For a child run: the run whose child step started it.
        parent_step (str | Unset): For a child run: that step.
        priority (int | Unset): The run's priority (default 0; higher is offered first).
        rerun_of (str | Unset): The run this one reran, reusing its completed steps' outputs.
    """

    created_at: datetime.datetime
    id: str
    pending_events: list[str]
    state: RunState
    status: RunStatus
    steps: list[StepView]
    steps_done: int
    steps_total: int
    updated_at: datetime.datetime
    usage: Usage
    version: str
    workflow: str
    attributes: RunAttributes | Unset = UNSET
    budget: Budget | Unset = UNSET
    compensation: Compensation | Unset = UNSET
    continued_as: str | Unset = UNSET
    continued_from: str | Unset = UNSET
    correlation: str | Unset = UNSET
    deadline: datetime.datetime | Unset = UNSET
    ended_at: datetime.datetime | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    event: EventRef | Unset = UNSET
    input_: Any | Unset = UNSET
    no_live_worker: bool | Unset = UNSET
    output: Any | Unset = UNSET
    parent: str | Unset = UNSET
    parent_step: str | Unset = UNSET
    priority: int | Unset = UNSET
    rerun_of: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        pending_events = self.pending_events

        state = self.state.to_dict()

        status = self.status.value

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        steps_done = self.steps_done

        steps_total = self.steps_total

        updated_at = self.updated_at.isoformat()

        usage = self.usage.to_dict()

        version = self.version

        workflow = self.workflow

        attributes: dict[str, Any] | Unset = UNSET
        if not isinstance(self.attributes, Unset):
            attributes = self.attributes.to_dict()

        budget: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budget, Unset):
            budget = self.budget.to_dict()

        compensation: dict[str, Any] | Unset = UNSET
        if not isinstance(self.compensation, Unset):
            compensation = self.compensation.to_dict()

        continued_as = self.continued_as

        continued_from = self.continued_from

        correlation = self.correlation

        deadline: str | Unset = UNSET
        if not isinstance(self.deadline, Unset):
            deadline = self.deadline.isoformat()

        ended_at: str | Unset = UNSET
        if not isinstance(self.ended_at, Unset):
            ended_at = self.ended_at.isoformat()

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        event: dict[str, Any] | Unset = UNSET
        if not isinstance(self.event, Unset):
            event = self.event.to_dict()

        input_ = self.input_

        no_live_worker = self.no_live_worker

        output = self.output

        parent = self.parent

        parent_step = self.parent_step

        priority = self.priority

        rerun_of = self.rerun_of

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "pending_events": pending_events,
                "state": state,
                "status": status,
                "steps": steps,
                "steps_done": steps_done,
                "steps_total": steps_total,
                "updated_at": updated_at,
                "usage": usage,
                "version": version,
                "workflow": workflow,
            }
        )
        if attributes is not UNSET:
            field_dict["attributes"] = attributes
        if budget is not UNSET:
            field_dict["budget"] = budget
        if compensation is not UNSET:
            field_dict["compensation"] = compensation
        if continued_as is not UNSET:
            field_dict["continued_as"] = continued_as
        if continued_from is not UNSET:
            field_dict["continued_from"] = continued_from
        if correlation is not UNSET:
            field_dict["correlation"] = correlation
        if deadline is not UNSET:
            field_dict["deadline"] = deadline
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if error is not UNSET:
            field_dict["error"] = error
        if event is not UNSET:
            field_dict["event"] = event
        if input_ is not UNSET:
            field_dict["input"] = input_
        if no_live_worker is not UNSET:
            field_dict["no_live_worker"] = no_live_worker
        if output is not UNSET:
            field_dict["output"] = output
        if parent is not UNSET:
            field_dict["parent"] = parent
        if parent_step is not UNSET:
            field_dict["parent_step"] = parent_step
        if priority is not UNSET:
            field_dict["priority"] = priority
        if rerun_of is not UNSET:
            field_dict["rerun_of"] = rerun_of

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.budget import Budget  # noqa: PLC0415
        from ..models.compensation import Compensation  # noqa: PLC0415
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.event_ref import EventRef  # noqa: PLC0415
        from ..models.run_attributes import RunAttributes  # noqa: PLC0415
        from ..models.run_state import RunState  # noqa: PLC0415
        from ..models.step_view import StepView  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        pending_events = cast(list[str], d.pop("pending_events"))

        state = RunState.from_dict(d.pop("state"))

        status = RunStatus(d.pop("status"))

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = StepView.from_dict(steps_item_data)

            steps.append(steps_item)

        steps_done = d.pop("steps_done")

        steps_total = d.pop("steps_total")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        usage = Usage.from_dict(d.pop("usage"))

        version = d.pop("version")

        workflow = d.pop("workflow")

        _attributes = d.pop("attributes", UNSET)
        attributes: RunAttributes | Unset
        if isinstance(_attributes, Unset):
            attributes = UNSET
        else:
            attributes = RunAttributes.from_dict(_attributes)

        _budget = d.pop("budget", UNSET)
        budget: Budget | Unset
        if isinstance(_budget, Unset):
            budget = UNSET
        else:
            budget = Budget.from_dict(_budget)

        _compensation = d.pop("compensation", UNSET)
        compensation: Compensation | Unset
        if isinstance(_compensation, Unset):
            compensation = UNSET
        else:
            compensation = Compensation.from_dict(_compensation)

        continued_as = d.pop("continued_as", UNSET)

        continued_from = d.pop("continued_from", UNSET)

        correlation = d.pop("correlation", UNSET)

        _deadline = d.pop("deadline", UNSET)
        deadline: datetime.datetime | Unset
        if isinstance(_deadline, Unset):
            deadline = UNSET
        else:
            deadline = datetime.datetime.fromisoformat(_deadline)

        _ended_at = d.pop("ended_at", UNSET)
        ended_at: datetime.datetime | Unset
        if isinstance(_ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = datetime.datetime.fromisoformat(_ended_at)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        _event = d.pop("event", UNSET)
        event: EventRef | Unset
        if isinstance(_event, Unset):
            event = UNSET
        else:
            event = EventRef.from_dict(_event)

        input_ = d.pop("input", UNSET)

        no_live_worker = d.pop("no_live_worker", UNSET)

        output = d.pop("output", UNSET)

        parent = d.pop("parent", UNSET)

        parent_step = d.pop("parent_step", UNSET)

        priority = d.pop("priority", UNSET)

        rerun_of = d.pop("rerun_of", UNSET)

        run = cls(
            created_at=created_at,
            id=id,
            pending_events=pending_events,
            state=state,
            status=status,
            steps=steps,
            steps_done=steps_done,
            steps_total=steps_total,
            updated_at=updated_at,
            usage=usage,
            version=version,
            workflow=workflow,
            attributes=attributes,
            budget=budget,
            compensation=compensation,
            continued_as=continued_as,
            continued_from=continued_from,
            correlation=correlation,
            deadline=deadline,
            ended_at=ended_at,
            error=error,
            event=event,
            input_=input_,
            no_live_worker=no_live_worker,
            output=output,
            parent=parent,
            parent_step=parent_step,
            priority=priority,
            rerun_of=rerun_of,
        )

        return run

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.step_view_kind import StepViewKind
from ..models.step_view_status import StepViewStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.attempt import Attempt
    from ..models.cache_hit import CacheHit
    from ..models.error_info import ErrorInfo
    from ..models.holder import Holder
    from ..models.map_progress import MapProgress
    from ..models.operation import Operation
    from ..models.usage import Usage


T = TypeVar("T", bound="StepView")


@_attrs_define
class StepView:
    """
    Attributes:
        attempts (list[Attempt]): The step's attempts; empty before the first.
        id (str):
        kind (StepViewKind):
        status (StepViewStatus):
        usage (Usage):
        attempt (int | Unset): Current or last attempt number.
        cached (CacheHit | Unset):
        child (str | Unset): For a child step: the id of its child run.
        error (ErrorInfo | Unset):
        event (str | Unset): Wait steps: the event name that resumes the wait.
        failures (int | Unset): Retry budget spent.
        holder (Holder | Unset):
        interrupt (Any | Unset): The payload the step's body last interrupted with (status interrupted: waiting for a
            resume; kept after it).
        map_ (MapProgress | Unset):
        operations (list[Operation] | Unset): For a function step: the operations its body checkpointed, in order.
        output (Any | Unset):
        ready_at (datetime.datetime | Unset):
        resume (Any | Unset): The value the step was last resumed with.
        visits (int | Unset): How many times the step started (or was skipped): 1, plus one for each time a loop sent
            the run back over it. Templates see it as steps.<id>.visits.
        wake_at (datetime.datetime | Unset): When a sleep ends or a wait times out.
    """

    attempts: list[Attempt]
    id: str
    kind: StepViewKind
    status: StepViewStatus
    usage: Usage
    attempt: int | Unset = UNSET
    cached: CacheHit | Unset = UNSET
    child: str | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    event: str | Unset = UNSET
    failures: int | Unset = UNSET
    holder: Holder | Unset = UNSET
    interrupt: Any | Unset = UNSET
    map_: MapProgress | Unset = UNSET
    operations: list[Operation] | Unset = UNSET
    output: Any | Unset = UNSET
    ready_at: datetime.datetime | Unset = UNSET
    resume: Any | Unset = UNSET
    visits: int | Unset = UNSET
    wake_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)

        id = self.id

        kind = self.kind.value

        status = self.status.value

        usage = self.usage.to_dict()

        attempt = self.attempt

        cached: dict[str, Any] | Unset = UNSET
        if not isinstance(self.cached, Unset):
            cached = self.cached.to_dict()

        child = self.child

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        event = self.event

        failures = self.failures

        holder: dict[str, Any] | Unset = UNSET
        if not isinstance(self.holder, Unset):
            holder = self.holder.to_dict()

        interrupt = self.interrupt

        map_: dict[str, Any] | Unset = UNSET
        if not isinstance(self.map_, Unset):
            map_ = self.map_.to_dict()

        operations: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.operations, Unset):
            operations = []
            for operations_item_data in self.operations:
                operations_item = operations_item_data.to_dict()
                operations.append(operations_item)

        output = self.output

        ready_at: str | Unset = UNSET
        if not isinstance(self.ready_at, Unset):
            ready_at = self.ready_at.isoformat()

        resume = self.resume

        visits = self.visits

        wake_at: str | Unset = UNSET
        if not isinstance(self.wake_at, Unset):
            wake_at = self.wake_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "attempts": attempts,
                "id": id,
                "kind": kind,
                "status": status,
                "usage": usage,
            }
        )
        if attempt is not UNSET:
            field_dict["attempt"] = attempt
        if cached is not UNSET:
            field_dict["cached"] = cached
        if child is not UNSET:
            field_dict["child"] = child
        if error is not UNSET:
            field_dict["error"] = error
        if event is not UNSET:
            field_dict["event"] = event
        if failures is not UNSET:
            field_dict["failures"] = failures
        if holder is not UNSET:
            field_dict["holder"] = holder
        if interrupt is not UNSET:
            field_dict["interrupt"] = interrupt
        if map_ is not UNSET:
            field_dict["map"] = map_
        if operations is not UNSET:
            field_dict["operations"] = operations
        if output is not UNSET:
            field_dict["output"] = output
        if ready_at is not UNSET:
            field_dict["ready_at"] = ready_at
        if resume is not UNSET:
            field_dict["resume"] = resume
        if visits is not UNSET:
            field_dict["visits"] = visits
        if wake_at is not UNSET:
            field_dict["wake_at"] = wake_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.attempt import Attempt  # noqa: PLC0415
        from ..models.cache_hit import CacheHit  # noqa: PLC0415
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.holder import Holder  # noqa: PLC0415
        from ..models.map_progress import MapProgress  # noqa: PLC0415
        from ..models.operation import Operation  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in _attempts:
            attempts_item = Attempt.from_dict(attempts_item_data)

            attempts.append(attempts_item)

        id = d.pop("id")

        kind = StepViewKind(d.pop("kind"))

        status = StepViewStatus(d.pop("status"))

        usage = Usage.from_dict(d.pop("usage"))

        attempt = d.pop("attempt", UNSET)

        _cached = d.pop("cached", UNSET)
        cached: CacheHit | Unset
        if isinstance(_cached, Unset):
            cached = UNSET
        else:
            cached = CacheHit.from_dict(_cached)

        child = d.pop("child", UNSET)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        event = d.pop("event", UNSET)

        failures = d.pop("failures", UNSET)

        _holder = d.pop("holder", UNSET)
        holder: Holder | Unset
        if isinstance(_holder, Unset):
            holder = UNSET
        else:
            holder = Holder.from_dict(_holder)

        interrupt = d.pop("interrupt", UNSET)

        _map_ = d.pop("map", UNSET)
        map_: MapProgress | Unset
        if isinstance(_map_, Unset):
            map_ = UNSET
        else:
            map_ = MapProgress.from_dict(_map_)

        _operations = d.pop("operations", UNSET)
        operations: list[Operation] | Unset = UNSET
        if _operations is not UNSET:
            operations = []
            for operations_item_data in _operations:
                operations_item = Operation.from_dict(operations_item_data)

                operations.append(operations_item)

        output = d.pop("output", UNSET)

        _ready_at = d.pop("ready_at", UNSET)
        ready_at: datetime.datetime | Unset
        if isinstance(_ready_at, Unset):
            ready_at = UNSET
        else:
            ready_at = datetime.datetime.fromisoformat(_ready_at)

        resume = d.pop("resume", UNSET)

        visits = d.pop("visits", UNSET)

        _wake_at = d.pop("wake_at", UNSET)
        wake_at: datetime.datetime | Unset
        if isinstance(_wake_at, Unset):
            wake_at = UNSET
        else:
            wake_at = datetime.datetime.fromisoformat(_wake_at)

        step_view = cls(
            attempts=attempts,
            id=id,
            kind=kind,
            status=status,
            usage=usage,
            attempt=attempt,
            cached=cached,
            child=child,
            error=error,
            event=event,
            failures=failures,
            holder=holder,
            interrupt=interrupt,
            map_=map_,
            operations=operations,
            output=output,
            ready_at=ready_at,
            resume=resume,
            visits=visits,
            wake_at=wake_at,
        )

        return step_view

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.step_progress_kind import StepProgressKind
from ..models.step_progress_status import StepProgressStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo
    from ..models.holder import Holder


T = TypeVar("T", bound="StepProgress")


@_attrs_define
class StepProgress:
    """
    Attributes:
        id (str):
        status (StepProgressStatus):
        attempt (int | Unset):
        error (ErrorInfo | Unset):
        event (str | Unset): Wait steps: the event name that resumes the wait.
        failures (int | Unset):
        holder (Holder | Unset):
        kind (StepProgressKind | Unset):
        ready_at (datetime.datetime | Unset): A task step waiting for a retry: when it becomes claimable.
        wake_at (datetime.datetime | Unset): When a sleep ends or a wait times out.
    """

    id: str
    status: StepProgressStatus
    attempt: int | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    event: str | Unset = UNSET
    failures: int | Unset = UNSET
    holder: Holder | Unset = UNSET
    kind: StepProgressKind | Unset = UNSET
    ready_at: datetime.datetime | Unset = UNSET
    wake_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        status = self.status.value

        attempt = self.attempt

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        event = self.event

        failures = self.failures

        holder: dict[str, Any] | Unset = UNSET
        if not isinstance(self.holder, Unset):
            holder = self.holder.to_dict()

        kind: str | Unset = UNSET
        if not isinstance(self.kind, Unset):
            kind = self.kind.value

        ready_at: str | Unset = UNSET
        if not isinstance(self.ready_at, Unset):
            ready_at = self.ready_at.isoformat()

        wake_at: str | Unset = UNSET
        if not isinstance(self.wake_at, Unset):
            wake_at = self.wake_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "status": status,
            }
        )
        if attempt is not UNSET:
            field_dict["attempt"] = attempt
        if error is not UNSET:
            field_dict["error"] = error
        if event is not UNSET:
            field_dict["event"] = event
        if failures is not UNSET:
            field_dict["failures"] = failures
        if holder is not UNSET:
            field_dict["holder"] = holder
        if kind is not UNSET:
            field_dict["kind"] = kind
        if ready_at is not UNSET:
            field_dict["ready_at"] = ready_at
        if wake_at is not UNSET:
            field_dict["wake_at"] = wake_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.holder import Holder  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        status = StepProgressStatus(d.pop("status"))

        attempt = d.pop("attempt", UNSET)

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

        _kind = d.pop("kind", UNSET)
        kind: StepProgressKind | Unset
        if isinstance(_kind, Unset):
            kind = UNSET
        else:
            kind = StepProgressKind(_kind)

        _ready_at = d.pop("ready_at", UNSET)
        ready_at: datetime.datetime | Unset
        if isinstance(_ready_at, Unset):
            ready_at = UNSET
        else:
            ready_at = datetime.datetime.fromisoformat(_ready_at)

        _wake_at = d.pop("wake_at", UNSET)
        wake_at: datetime.datetime | Unset
        if isinstance(_wake_at, Unset):
            wake_at = UNSET
        else:
            wake_at = datetime.datetime.fromisoformat(_wake_at)

        step_progress = cls(
            id=id,
            status=status,
            attempt=attempt,
            error=error,
            event=event,
            failures=failures,
            holder=holder,
            kind=kind,
            ready_at=ready_at,
            wake_at=wake_at,
        )

        return step_progress

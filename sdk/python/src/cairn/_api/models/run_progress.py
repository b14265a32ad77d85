from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.run_progress_status import RunProgressStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo
    from ..models.step_progress import StepProgress


T = TypeVar("T", bound="RunProgress")


@_attrs_define
class RunProgress:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str):
        rev (int): Counts the run's committed changes: pass it as after to wait for the next.
        status (RunProgressStatus):
        steps (list[StepProgress]):
        steps_done (int): Declared steps completed or skipped (a map step counts once, compensation steps not).
        steps_total (int): The steps the definition declares (a map step counts once, compensation steps not).
        updated_at (datetime.datetime):
        version (str):
        workflow (str):
        ended_at (datetime.datetime | Unset):
        error (ErrorInfo | Unset):
        holders_truncated (bool | Unset): With holders=true: more task steps were ready than the holders read per call;
            those without a holder may be held.
        no_live_worker (bool | Unset): True while a task step is ready and no worker seen alive serves this
            workflow@version.
    """

    created_at: datetime.datetime
    id: str
    rev: int
    status: RunProgressStatus
    steps: list[StepProgress]
    steps_done: int
    steps_total: int
    updated_at: datetime.datetime
    version: str
    workflow: str
    ended_at: datetime.datetime | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    holders_truncated: bool | Unset = UNSET
    no_live_worker: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        rev = self.rev

        status = self.status.value

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        steps_done = self.steps_done

        steps_total = self.steps_total

        updated_at = self.updated_at.isoformat()

        version = self.version

        workflow = self.workflow

        ended_at: str | Unset = UNSET
        if not isinstance(self.ended_at, Unset):
            ended_at = self.ended_at.isoformat()

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        holders_truncated = self.holders_truncated

        no_live_worker = self.no_live_worker

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "rev": rev,
                "status": status,
                "steps": steps,
                "steps_done": steps_done,
                "steps_total": steps_total,
                "updated_at": updated_at,
                "version": version,
                "workflow": workflow,
            }
        )
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if error is not UNSET:
            field_dict["error"] = error
        if holders_truncated is not UNSET:
            field_dict["holders_truncated"] = holders_truncated
        if no_live_worker is not UNSET:
            field_dict["no_live_worker"] = no_live_worker

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.step_progress import StepProgress  # noqa: PLC0415

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        rev = d.pop("rev")

        status = RunProgressStatus(d.pop("status"))

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = StepProgress.from_dict(steps_item_data)

            steps.append(steps_item)

        steps_done = d.pop("steps_done")

        steps_total = d.pop("steps_total")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        workflow = d.pop("workflow")

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

        holders_truncated = d.pop("holders_truncated", UNSET)

        no_live_worker = d.pop("no_live_worker", UNSET)

        run_progress = cls(
            created_at=created_at,
            id=id,
            rev=rev,
            status=status,
            steps=steps,
            steps_done=steps_done,
            steps_total=steps_total,
            updated_at=updated_at,
            version=version,
            workflow=workflow,
            ended_at=ended_at,
            error=error,
            holders_truncated=holders_truncated,
            no_live_worker=no_live_worker,
        )

        return run_progress

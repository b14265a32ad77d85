from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.run_summary_status import RunSummaryStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo
    from ..models.run_summary_attributes import RunSummaryAttributes


T = TypeVar("T", bound="RunSummary")


@_attrs_define
class RunSummary:
    """
    Attributes:
        created_at (datetime.datetime):
        id (str):
        status (RunSummaryStatus):
        steps_done (int): Declared steps completed or skipped (a map step counts once, compensation steps not).
        steps_total (int): The steps the definition declares (a map step counts once, compensation steps not).
        updated_at (datetime.datetime):
        version (str):
        workflow (str):
        attributes (RunSummaryAttributes | Unset): The run's search attributes.
        ended_at (datetime.datetime | Unset):
        error (ErrorInfo | Unset):
    """

    created_at: datetime.datetime
    id: str
    status: RunSummaryStatus
    steps_done: int
    steps_total: int
    updated_at: datetime.datetime
    version: str
    workflow: str
    attributes: RunSummaryAttributes | Unset = UNSET
    ended_at: datetime.datetime | Unset = UNSET
    error: ErrorInfo | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        status = self.status.value

        steps_done = self.steps_done

        steps_total = self.steps_total

        updated_at = self.updated_at.isoformat()

        version = self.version

        workflow = self.workflow

        attributes: dict[str, Any] | Unset = UNSET
        if not isinstance(self.attributes, Unset):
            attributes = self.attributes.to_dict()

        ended_at: str | Unset = UNSET
        if not isinstance(self.ended_at, Unset):
            ended_at = self.ended_at.isoformat()

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "created_at": created_at,
                "id": id,
                "status": status,
                "steps_done": steps_done,
                "steps_total": steps_total,
                "updated_at": updated_at,
                "version": version,
                "workflow": workflow,
            }
        )
        if attributes is not UNSET:
            field_dict["attributes"] = attributes
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.run_summary_attributes import RunSummaryAttributes  # noqa: PLC0415

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        status = RunSummaryStatus(d.pop("status"))

        steps_done = d.pop("steps_done")

        steps_total = d.pop("steps_total")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        workflow = d.pop("workflow")

        _attributes = d.pop("attributes", UNSET)
        attributes: RunSummaryAttributes | Unset
        if isinstance(_attributes, Unset):
            attributes = UNSET
        else:
            attributes = RunSummaryAttributes.from_dict(_attributes)

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

        run_summary = cls(
            created_at=created_at,
            id=id,
            status=status,
            steps_done=steps_done,
            steps_total=steps_total,
            updated_at=updated_at,
            version=version,
            workflow=workflow,
            attributes=attributes,
            ended_at=ended_at,
            error=error,
        )

        return run_summary

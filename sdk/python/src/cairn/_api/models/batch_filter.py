from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.batch_filter_status_item import BatchFilterStatusItem
from ..types import UNSET, Unset

T = TypeVar("T", bound="BatchFilter")


@_attrs_define
class BatchFilter:
    """
    Attributes:
        started_after (datetime.datetime | Unset): Runs started at or after this time.
        started_before (datetime.datetime | Unset): Runs started before this time (and always before the batch was
            created: runs the batch itself starts never match).
        status (list[BatchFilterStatusItem] | Unset): Runs in one of these statuses.
        workflow (str | Unset): Runs of this workflow.
    """

    started_after: datetime.datetime | Unset = UNSET
    started_before: datetime.datetime | Unset = UNSET
    status: list[BatchFilterStatusItem] | Unset = UNSET
    workflow: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        started_after: str | Unset = UNSET
        if not isinstance(self.started_after, Unset):
            started_after = self.started_after.isoformat()

        started_before: str | Unset = UNSET
        if not isinstance(self.started_before, Unset):
            started_before = self.started_before.isoformat()

        status: list[str] | Unset = UNSET
        if not isinstance(self.status, Unset):
            status = []
            for status_item_data in self.status:
                status_item = status_item_data.value
                status.append(status_item)

        workflow = self.workflow

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if started_after is not UNSET:
            field_dict["started_after"] = started_after
        if started_before is not UNSET:
            field_dict["started_before"] = started_before
        if status is not UNSET:
            field_dict["status"] = status
        if workflow is not UNSET:
            field_dict["workflow"] = workflow

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _started_after = d.pop("started_after", UNSET)
        started_after: datetime.datetime | Unset
        if isinstance(_started_after, Unset):
            started_after = UNSET
        else:
            started_after = datetime.datetime.fromisoformat(_started_after)

        _started_before = d.pop("started_before", UNSET)
        started_before: datetime.datetime | Unset
        if isinstance(_started_before, Unset):
            started_before = UNSET
        else:
            started_before = datetime.datetime.fromisoformat(_started_before)

        _status = d.pop("status", UNSET)
        status: list[BatchFilterStatusItem] | Unset = UNSET
        if _status is not UNSET:
            status = []
            for status_item_data in _status:
                status_item = BatchFilterStatusItem(status_item_data)

                status.append(status_item)

        workflow = d.pop("workflow", UNSET)

        batch_filter = cls(
            started_after=started_after,
            started_before=started_before,
            status=status,
            workflow=workflow,
        )

        return batch_filter

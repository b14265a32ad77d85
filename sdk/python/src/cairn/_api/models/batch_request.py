from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.batch_request_action import BatchRequestAction
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.batch_filter import BatchFilter


T = TypeVar("T", bound="BatchRequest")


@_attrs_define
class BatchRequest:
    """
    Attributes:
        action (BatchRequestAction): cancel: cancel each matching running (or paused) run. rerun: rerun each matching
            ended run (reusing its completed steps), once, whatever happens to the batch. pause: pause each matching running
            run. resume: resume each matching paused run.
        filter_ (BatchFilter):
        reason (str | Unset): Recorded with each cancel.
    """

    action: BatchRequestAction
    filter_: BatchFilter
    reason: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        action = self.action.value

        filter_ = self.filter_.to_dict()

        reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "action": action,
                "filter": filter_,
            }
        )
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_filter import BatchFilter  # noqa: PLC0415

        d = dict(src_dict)
        action = BatchRequestAction(d.pop("action"))

        filter_ = BatchFilter.from_dict(d.pop("filter"))

        reason = d.pop("reason", UNSET)

        batch_request = cls(
            action=action,
            filter_=filter_,
            reason=reason,
        )

        return batch_request

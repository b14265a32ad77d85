from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule import Schedule


T = TypeVar("T", bound="SchedulePage")


@_attrs_define
class SchedulePage:
    """
    Attributes:
        schedules (list[Schedule]):
        next_cursor (str | Unset):
    """

    schedules: list[Schedule]
    next_cursor: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        schedules = []
        for schedules_item_data in self.schedules:
            schedules_item = schedules_item_data.to_dict()
            schedules.append(schedules_item)

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "schedules": schedules,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.schedule import Schedule  # noqa: PLC0415

        d = dict(src_dict)
        schedules = []
        _schedules = d.pop("schedules")
        for schedules_item_data in _schedules:
            schedules_item = Schedule.from_dict(schedules_item_data)

            schedules.append(schedules_item)

        next_cursor = d.pop("next_cursor", UNSET)

        schedule_page = cls(
            schedules=schedules,
            next_cursor=next_cursor,
        )

        return schedule_page

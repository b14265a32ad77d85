from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.backfill_tick import BackfillTick


T = TypeVar("T", bound="BackfillResult")


@_attrs_define
class BackfillResult:
    """
    Attributes:
        ticks (list[BackfillTick]):
        truncated (bool): More ticks lay in the range than max: backfill again from the last tick.
    """

    ticks: list[BackfillTick]
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        ticks = []
        for ticks_item_data in self.ticks:
            ticks_item = ticks_item_data.to_dict()
            ticks.append(ticks_item)

        truncated = self.truncated

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "ticks": ticks,
                "truncated": truncated,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.backfill_tick import BackfillTick  # noqa: PLC0415

        d = dict(src_dict)
        ticks = []
        _ticks = d.pop("ticks")
        for ticks_item_data in _ticks:
            ticks_item = BackfillTick.from_dict(ticks_item_data)

            ticks.append(ticks_item)

        truncated = d.pop("truncated")

        backfill_result = cls(
            ticks=ticks,
            truncated=truncated,
        )

        return backfill_result

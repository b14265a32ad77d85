from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.reap_stats import ReapStats


T = TypeVar("T", bound="ClockResponse")


@_attrs_define
class ClockResponse:
    """
    Attributes:
        now (datetime.datetime): The server's time: what its timers, sleeps, backoffs, deadlines and leases are measured
            on.
        offset_ms (int): How far the clock has been moved ahead of the real time, in milliseconds.
        reaped (ReapStats | Unset):
    """

    now: datetime.datetime
    offset_ms: int
    reaped: ReapStats | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        now = self.now.isoformat()

        offset_ms = self.offset_ms

        reaped: dict[str, Any] | Unset = UNSET
        if not isinstance(self.reaped, Unset):
            reaped = self.reaped.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "now": now,
                "offset_ms": offset_ms,
            }
        )
        if reaped is not UNSET:
            field_dict["reaped"] = reaped

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.reap_stats import ReapStats  # noqa: PLC0415

        d = dict(src_dict)
        now = datetime.datetime.fromisoformat(d.pop("now"))

        offset_ms = d.pop("offset_ms")

        _reaped = d.pop("reaped", UNSET)
        reaped: ReapStats | Unset
        if isinstance(_reaped, Unset):
            reaped = UNSET
        else:
            reaped = ReapStats.from_dict(_reaped)

        clock_response = cls(
            now=now,
            offset_ms=offset_ms,
            reaped=reaped,
        )

        return clock_response

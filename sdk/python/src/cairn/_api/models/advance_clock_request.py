from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="AdvanceClockRequest")


@_attrs_define
class AdvanceClockRequest:
    """
    Attributes:
        advance_ms (int): How far to move the clock forward, in milliseconds (at most ten years a call; the clock never
            goes back).
    """

    advance_ms: int

    def to_dict(self) -> dict[str, Any]:
        advance_ms = self.advance_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "advance_ms": advance_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        advance_ms = d.pop("advance_ms")

        advance_clock_request = cls(
            advance_ms=advance_ms,
        )

        return advance_clock_request

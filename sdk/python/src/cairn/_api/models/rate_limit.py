from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RateLimit")


@_attrs_define
class RateLimit:
    """
    Attributes:
        limit (int): Attempts handed out per period.
        period (str): The period, as a Go duration: "1s" to "24h".
        burst (int | Unset): Attempts that may be handed out at once (default 1: evenly spaced, period/limit apart). At
            most limit. Any window of one period holds at most limit+burst-1.
        key (str | Unset): A template rendered when an attempt is claimed (such as "${input.api}"): attempts whose keys
            render equal share the rate. Empty: one rate for every attempt of the step.
    """

    limit: int
    period: str
    burst: int | Unset = UNSET
    key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        period = self.period

        burst = self.burst

        key = self.key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "limit": limit,
                "period": period,
            }
        )
        if burst is not UNSET:
            field_dict["burst"] = burst
        if key is not UNSET:
            field_dict["key"] = key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit")

        period = d.pop("period")

        burst = d.pop("burst", UNSET)

        key = d.pop("key", UNSET)

        rate_limit = cls(
            limit=limit,
            period=period,
            burst=burst,
            key=key,
        )

        return rate_limit

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="HeartbeatManyRequest")


@_attrs_define
class HeartbeatManyRequest:
    """
    Attributes:
        leases (list[str]): Lease ids to extend.
    """

    leases: list[str]

    def to_dict(self) -> dict[str, Any]:
        leases = self.leases

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "leases": leases,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        leases = cast(list[str], d.pop("leases"))

        heartbeat_many_request = cls(
            leases=leases,
        )

        return heartbeat_many_request

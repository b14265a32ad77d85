from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.lease import Lease


T = TypeVar("T", bound="ClaimResponse")


@_attrs_define
class ClaimResponse:
    """
    Attributes:
        leases (list[Lease]): Up to max leases; empty when nothing became ready while the claim was held.
        pause_ms (int | Unset): Set on an empty answer when the server holds claims briefly (CAIRN_CLAIM_PAUSE, e.g. on
            Lambda, where a held claim takes an execution environment): wait up to this long before claiming again. Other
            workers' claims and the hint bus pick up work meanwhile. Absent: claim again at once.
    """

    leases: list[Lease]
    pause_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        leases = []
        for leases_item_data in self.leases:
            leases_item = leases_item_data.to_dict()
            leases.append(leases_item)

        pause_ms = self.pause_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "leases": leases,
            }
        )
        if pause_ms is not UNSET:
            field_dict["pause_ms"] = pause_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lease import Lease  # noqa: PLC0415

        d = dict(src_dict)
        leases = []
        _leases = d.pop("leases")
        for leases_item_data in _leases:
            leases_item = Lease.from_dict(leases_item_data)

            leases.append(leases_item)

        pause_ms = d.pop("pause_ms", UNSET)

        claim_response = cls(
            leases=leases,
            pause_ms=pause_ms,
        )

        return claim_response

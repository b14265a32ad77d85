from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.ended_run_status import EndedRunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.lease import Lease


T = TypeVar("T", bound="Ended")


@_attrs_define
class Ended:
    """
    Attributes:
        run_status (EndedRunStatus): The run's status after this call.
        leases (list[Lease] | Unset): With claim_next: the leases claimed for the worker after the complete was applied,
            as a claim answers them (none when nothing was ready). Run them like a claim's.
    """

    run_status: EndedRunStatus
    leases: list[Lease] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        run_status = self.run_status.value

        leases: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.leases, Unset):
            leases = []
            for leases_item_data in self.leases:
                leases_item = leases_item_data.to_dict()
                leases.append(leases_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "run_status": run_status,
            }
        )
        if leases is not UNSET:
            field_dict["leases"] = leases

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lease import Lease  # noqa: PLC0415

        d = dict(src_dict)
        run_status = EndedRunStatus(d.pop("run_status"))

        _leases = d.pop("leases", UNSET)
        leases: list[Lease] | Unset = UNSET
        if _leases is not UNSET:
            leases = []
            for leases_item_data in _leases:
                leases_item = Lease.from_dict(leases_item_data)

                leases.append(leases_item)

        ended = cls(
            run_status=run_status,
            leases=leases,
        )

        return ended

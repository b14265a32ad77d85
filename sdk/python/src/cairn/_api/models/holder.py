from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Holder")


@_attrs_define
class Holder:
    """
    Attributes:
        claimed_at (datetime.datetime):
        expires_at (datetime.datetime):
        worker (str):
        started_at (datetime.datetime | Unset): Set for at_most_once attempts once started.
    """

    claimed_at: datetime.datetime
    expires_at: datetime.datetime
    worker: str
    started_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        claimed_at = self.claimed_at.isoformat()

        expires_at = self.expires_at.isoformat()

        worker = self.worker

        started_at: str | Unset = UNSET
        if not isinstance(self.started_at, Unset):
            started_at = self.started_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "claimed_at": claimed_at,
                "expires_at": expires_at,
                "worker": worker,
            }
        )
        if started_at is not UNSET:
            field_dict["started_at"] = started_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        claimed_at = datetime.datetime.fromisoformat(d.pop("claimed_at"))

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        worker = d.pop("worker")

        _started_at = d.pop("started_at", UNSET)
        started_at: datetime.datetime | Unset
        if isinstance(_started_at, Unset):
            started_at = UNSET
        else:
            started_at = datetime.datetime.fromisoformat(_started_at)

        holder = cls(
            claimed_at=claimed_at,
            expires_at=expires_at,
            worker=worker,
            started_at=started_at,
        )

        return holder

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.heartbeat_result_reason import HeartbeatResultReason
from ..types import UNSET, Unset

T = TypeVar("T", bound="HeartbeatResult")


@_attrs_define
class HeartbeatResult:
    """
    Attributes:
        lease (str):
        error (str | Unset): Set when the heartbeat failed for another reason (retry it).
        expires_at (datetime.datetime | Unset): Set when the lease was extended.
        reason (HeartbeatResultReason | Unset): Set when the heartbeat was refused: cancel that body (already_applied,
            fenced, run_terminal or not_started).
    """

    lease: str
    error: str | Unset = UNSET
    expires_at: datetime.datetime | Unset = UNSET
    reason: HeartbeatResultReason | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease = self.lease

        error = self.error

        expires_at: str | Unset = UNSET
        if not isinstance(self.expires_at, Unset):
            expires_at = self.expires_at.isoformat()

        reason: str | Unset = UNSET
        if not isinstance(self.reason, Unset):
            reason = self.reason.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease": lease,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if expires_at is not UNSET:
            field_dict["expires_at"] = expires_at
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        lease = d.pop("lease")

        error = d.pop("error", UNSET)

        _expires_at = d.pop("expires_at", UNSET)
        expires_at: datetime.datetime | Unset
        if isinstance(_expires_at, Unset):
            expires_at = UNSET
        else:
            expires_at = datetime.datetime.fromisoformat(_expires_at)

        _reason = d.pop("reason", UNSET)
        reason: HeartbeatResultReason | Unset
        if isinstance(_reason, Unset):
            reason = UNSET
        else:
            reason = HeartbeatResultReason(_reason)

        heartbeat_result = cls(
            lease=lease,
            error=error,
            expires_at=expires_at,
            reason=reason,
        )

        return heartbeat_result

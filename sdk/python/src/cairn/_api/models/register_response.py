from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="RegisterResponse")


@_attrs_define
class RegisterResponse:
    """
    Attributes:
        heartbeat_ms (int): Send a heartbeat for every running lease this often.
        lease_ttl_ms (int): A lease expires this long after its claim or last heartbeat.
        max_hold_ms (int): The longest a claim is held open.
        worker_id (str): The worker's id: the one registered, or the one generated for a worker that gave none. Claims
            name it.
    """

    heartbeat_ms: int
    lease_ttl_ms: int
    max_hold_ms: int
    worker_id: str

    def to_dict(self) -> dict[str, Any]:
        heartbeat_ms = self.heartbeat_ms

        lease_ttl_ms = self.lease_ttl_ms

        max_hold_ms = self.max_hold_ms

        worker_id = self.worker_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "heartbeat_ms": heartbeat_ms,
                "lease_ttl_ms": lease_ttl_ms,
                "max_hold_ms": max_hold_ms,
                "worker_id": worker_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        heartbeat_ms = d.pop("heartbeat_ms")

        lease_ttl_ms = d.pop("lease_ttl_ms")

        max_hold_ms = d.pop("max_hold_ms")

        worker_id = d.pop("worker_id")

        register_response = cls(
            heartbeat_ms=heartbeat_ms,
            lease_ttl_ms=lease_ttl_ms,
            max_hold_ms=max_hold_ms,
            worker_id=worker_id,
        )

        return register_response

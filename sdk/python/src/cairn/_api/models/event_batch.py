from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="EventBatch")


@_attrs_define
class EventBatch:
    """
    Attributes:
        max_size (int): A window closes when it holds this many events (but not within a second of its first); the
            events beyond it start further runs of max_size each.
        timeout (str): A window closes this long after its first event, full or not (at least 1s).
        key (str | Unset): A CEL expression over event (name, id, payload), bare or as ${expr}: events of one value are
            batched together. Empty: one batch at a time for the workflow.
    """

    max_size: int
    timeout: str
    key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_size = self.max_size

        timeout = self.timeout

        key = self.key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max_size": max_size,
                "timeout": timeout,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_size = d.pop("max_size")

        timeout = d.pop("timeout")

        key = d.pop("key", UNSET)

        event_batch = cls(
            max_size=max_size,
            timeout=timeout,
            key=key,
        )

        return event_batch

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Debounce")


@_attrs_define
class Debounce:
    """
    Attributes:
        period (str): The quiet time after a key's last event before its run starts (at least 1s).
        key (str | Unset): A CEL expression over event (name, id, payload), bare or as ${expr}: events of one value
            share a window. Empty: one window for the workflow.
        timeout (str | Unset): The longest a window stays open after its first event, quiet or not (default and at most
            7 days; not less than period).
    """

    period: str
    key: str | Unset = UNSET
    timeout: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        period = self.period

        key = self.key

        timeout = self.timeout

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "period": period,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key
        if timeout is not UNSET:
            field_dict["timeout"] = timeout

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        period = d.pop("period")

        key = d.pop("key", UNSET)

        timeout = d.pop("timeout", UNSET)

        debounce = cls(
            period=period,
            key=key,
            timeout=timeout,
        )

        return debounce

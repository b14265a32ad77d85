from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StorePutRequest")


@_attrs_define
class StorePutRequest:
    """
    Attributes:
        value (Any): Any JSON value.
        if_absent (bool | Unset): Write only when the key has no value; a value is a 409.
        if_version (str | Unset): Write only over this version (from a read or a write); another version is a 409.
    """

    value: Any
    if_absent: bool | Unset = UNSET
    if_version: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        value = self.value

        if_absent = self.if_absent

        if_version = self.if_version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "value": value,
            }
        )
        if if_absent is not UNSET:
            field_dict["if_absent"] = if_absent
        if if_version is not UNSET:
            field_dict["if_version"] = if_version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        value = d.pop("value")

        if_absent = d.pop("if_absent", UNSET)

        if_version = d.pop("if_version", UNSET)

        store_put_request = cls(
            value=value,
            if_absent=if_absent,
            if_version=if_version,
        )

        return store_put_request

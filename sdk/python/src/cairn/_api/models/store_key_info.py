from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="StoreKeyInfo")


@_attrs_define
class StoreKeyInfo:
    """
    Attributes:
        key (str):
        size (int): The value's size in bytes.
        updated_at (datetime.datetime):
        version (str):
    """

    key: str
    size: int
    updated_at: datetime.datetime
    version: str

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        size = self.size

        updated_at = self.updated_at.isoformat()

        version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "key": key,
                "size": size,
                "updated_at": updated_at,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        key = d.pop("key")

        size = d.pop("size")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        store_key_info = cls(
            key=key,
            size=size,
            updated_at=updated_at,
            version=version,
        )

        return store_key_info

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StoreEntry")


@_attrs_define
class StoreEntry:
    """
    Attributes:
        key (str):
        namespace (str):
        updated_at (datetime.datetime):
        version (str): Opaque version of the value: pass it as if_version to write or delete only that value.
        value (Any | Unset): The value (absent in the answer to a write).
    """

    key: str
    namespace: str
    updated_at: datetime.datetime
    version: str
    value: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        namespace = self.namespace

        updated_at = self.updated_at.isoformat()

        version = self.version

        value = self.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "key": key,
                "namespace": namespace,
                "updated_at": updated_at,
                "version": version,
            }
        )
        if value is not UNSET:
            field_dict["value"] = value

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        key = d.pop("key")

        namespace = d.pop("namespace")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        value = d.pop("value", UNSET)

        store_entry = cls(
            key=key,
            namespace=namespace,
            updated_at=updated_at,
            version=version,
            value=value,
        )

        return store_entry

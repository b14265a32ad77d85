from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="CacheInvalidation")


@_attrs_define
class CacheInvalidation:
    """
    Attributes:
        deleted (int): Entries deleted.
    """

    deleted: int

    def to_dict(self) -> dict[str, Any]:
        deleted = self.deleted

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "deleted": deleted,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        deleted = d.pop("deleted")

        cache_invalidation = cls(
            deleted=deleted,
        )

        return cache_invalidation

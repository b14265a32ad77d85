from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.store_key_info import StoreKeyInfo


T = TypeVar("T", bound="StorePage")


@_attrs_define
class StorePage:
    """
    Attributes:
        keys (list[StoreKeyInfo]):
        next_cursor (str | Unset):
    """

    keys: list[StoreKeyInfo]
    next_cursor: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        keys = []
        for keys_item_data in self.keys:
            keys_item = keys_item_data.to_dict()
            keys.append(keys_item)

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "keys": keys,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.store_key_info import StoreKeyInfo  # noqa: PLC0415

        d = dict(src_dict)
        keys = []
        _keys = d.pop("keys")
        for keys_item_data in _keys:
            keys_item = StoreKeyInfo.from_dict(keys_item_data)

            keys.append(keys_item)

        next_cursor = d.pop("next_cursor", UNSET)

        store_page = cls(
            keys=keys,
            next_cursor=next_cursor,
        )

        return store_page

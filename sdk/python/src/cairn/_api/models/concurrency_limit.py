from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ConcurrencyLimit")


@_attrs_define
class ConcurrencyLimit:
    """
    Attributes:
        limit (int): Most attempts holding a lease at once under one key.
        key (str | Unset): A template over input, state, steps.<id>.output and run (such as "${input.customer}"),
            rendered when an attempt is claimed: attempts whose keys render equal share the limit. Empty: one limit for all
            of them (the step's, or the workflow's).
    """

    limit: int
    key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        limit = self.limit

        key = self.key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "limit": limit,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        limit = d.pop("limit")

        key = d.pop("key", UNSET)

        concurrency_limit = cls(
            limit=limit,
            key=key,
        )

        return concurrency_limit

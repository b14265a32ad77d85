from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="StepCache")


@_attrs_define
class StepCache:
    """
    Attributes:
        key (str | Unset): A CEL expression (bare or as ${expr}) over the step's rendered input, as input: steps of this
            workflow and step id whose keys render to the same value share an entry. Empty: the whole input.
        ttl (str | Unset): How long an entry is fresh after it was written (default 24h, at most 720h).
    """

    key: str | Unset = UNSET
    ttl: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        key = self.key

        ttl = self.ttl

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if key is not UNSET:
            field_dict["key"] = key
        if ttl is not UNSET:
            field_dict["ttl"] = ttl

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        key = d.pop("key", UNSET)

        ttl = d.pop("ttl", UNSET)

        step_cache = cls(
            key=key,
            ttl=ttl,
        )

        return step_cache

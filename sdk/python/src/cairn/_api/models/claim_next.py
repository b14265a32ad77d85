from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ClaimNext")


@_attrs_define
class ClaimNext:
    """
    Attributes:
        max_ (int): Most leases to return with the answer: the worker's slots this step frees (usually 1).
    """

    max_: int

    def to_dict(self) -> dict[str, Any]:
        max_ = self.max_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max": max_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        max_ = d.pop("max")

        claim_next = cls(
            max_=max_,
        )

        return claim_next

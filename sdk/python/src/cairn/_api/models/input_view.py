from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="InputView")


@_attrs_define
class InputView:
    """
    Attributes:
        bytes_ (int): Its size.
        kept (bool): False when it was too large to keep (over 8 KiB): only its size is known.
        input_ (Any | Unset): The input, as the worker received it (a value stored by reference stays a reference).
    """

    bytes_: int
    kept: bool
    input_: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        bytes_ = self.bytes_

        kept = self.kept

        input_ = self.input_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "bytes": bytes_,
                "kept": kept,
            }
        )
        if input_ is not UNSET:
            field_dict["input"] = input_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        kept = d.pop("kept")

        input_ = d.pop("input", UNSET)

        input_view = cls(
            bytes_=bytes_,
            kept=kept,
            input_=input_,
        )

        return input_view

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ProgressRequest")


@_attrs_define
class ProgressRequest:
    """
    Attributes:
        value (Any): Any JSON value, at most 16 KiB: the step's progress for the run's watchers. Not stored.
    """

    value: Any

    def to_dict(self) -> dict[str, Any]:
        value = self.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "value": value,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        value = d.pop("value")

        progress_request = cls(
            value=value,
        )

        return progress_request

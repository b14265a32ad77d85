from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ResumeStepRequest")


@_attrs_define
class ResumeStepRequest:
    """
    Attributes:
        value (Any | Unset): The answer: any JSON, at most 64 KiB, handed to the step's next attempt as resume (null
            when absent). Kept in the run record as sent (not encrypted).
    """

    value: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        value = self.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if value is not UNSET:
            field_dict["value"] = value

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        value = d.pop("value", UNSET)

        resume_step_request = cls(
            value=value,
        )

        return resume_step_request

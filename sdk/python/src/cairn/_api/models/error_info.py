from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ErrorInfo")


@_attrs_define
class ErrorInfo:
    """
    Attributes:
        class_ (str): Error class: retryable, fatal, unservable, render_error, timeout, lost, dead_lettered, or one the
            worker named.
        message (str): What went wrong, as the worker or engine said it (no stack traces).
        step (str | Unset): For a run's error: the step that failed it.
    """

    class_: str
    message: str
    step: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        class_ = self.class_

        message = self.message

        step = self.step

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "class": class_,
                "message": message,
            }
        )
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        class_ = d.pop("class")

        message = d.pop("message")

        step = d.pop("step", UNSET)

        error_info = cls(
            class_=class_,
            message=message,
            step=step,
        )

        return error_info

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProgressEvent")


@_attrs_define
class ProgressEvent:
    """
    Attributes:
        at (datetime.datetime): When the server accepted the message.
        attempt (int):
        step (str):
        value (Any):
        missed (int | Unset): Progress messages this stream dropped before this one because its reader fell behind.
    """

    at: datetime.datetime
    attempt: int
    step: str
    value: Any
    missed: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        attempt = self.attempt

        step = self.step

        value = self.value

        missed = self.missed

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "at": at,
                "attempt": attempt,
                "step": step,
                "value": value,
            }
        )
        if missed is not UNSET:
            field_dict["missed"] = missed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        attempt = d.pop("attempt")

        step = d.pop("step")

        value = d.pop("value")

        missed = d.pop("missed", UNSET)

        progress_event = cls(
            at=at,
            attempt=attempt,
            step=step,
            value=value,
            missed=missed,
        )

        return progress_event

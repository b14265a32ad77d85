from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Trigger")


@_attrs_define
class Trigger:
    """
    Attributes:
        event (str): The name of the published events that start a run.
        if_ (str | Unset): A CEL condition over event (its name, id and payload; bare, or as ${expr}): only the events
            for which it is true start a run. An event it cannot be evaluated on (a missing field, not a bool) starts none.
    """

    event: str
    if_: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event = self.event

        if_ = self.if_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "event": event,
            }
        )
        if if_ is not UNSET:
            field_dict["if"] = if_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event = d.pop("event")

        if_ = d.pop("if", UNSET)

        trigger = cls(
            event=event,
            if_=if_,
        )

        return trigger

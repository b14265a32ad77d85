from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="Route")


@_attrs_define
class Route:
    """
    Attributes:
        if_ (str): A CEL condition (bare, or as ${expr}) over input, state, run and steps.<id>.output and .visits, this
            step's own included, evaluated when the step completes.
        to (str): A step this one runs after (directly or not): it and every step between it and this one run again (a
            new visit).
    """

    if_: str
    to: str

    def to_dict(self) -> dict[str, Any]:
        if_ = self.if_

        to = self.to

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "if": if_,
                "to": to,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        if_ = d.pop("if")

        to = d.pop("to")

        route = cls(
            if_=if_,
            to=to,
        )

        return route

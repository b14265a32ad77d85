from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="CancelOn")


@_attrs_define
class CancelOn:
    """
    Attributes:
        event (str): The name of the published events that cancel a run.
        if_ (str | Unset): A CEL condition over event (name, id, payload) and the run's input, state and run (bare, or
            as ${expr}): only the events for which it is true cancel it. An event it cannot be evaluated on cancels nothing.
        timeout (str | Unset): Only events published within this long of the run's start cancel it (default: any time
            while it runs).
    """

    event: str
    if_: str | Unset = UNSET
    timeout: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event = self.event

        if_ = self.if_

        timeout = self.timeout

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "event": event,
            }
        )
        if if_ is not UNSET:
            field_dict["if"] = if_
        if timeout is not UNSET:
            field_dict["timeout"] = timeout

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event = d.pop("event")

        if_ = d.pop("if", UNSET)

        timeout = d.pop("timeout", UNSET)

        cancel_on = cls(
            event=event,
            if_=if_,
            timeout=timeout,
        )

        return cancel_on

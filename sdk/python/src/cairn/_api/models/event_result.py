from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="EventResult")


@_attrs_define
class EventResult:
    """
    Attributes:
        duplicate (bool): True when the event id was seen before: nothing changed.
        recorded (bool): True when no step was waiting: the event is kept for a later wait of that name.
        resumed (list[str]): The wait step (or waiting function step) that took the event: at most one, since an event
            is seen by exactly one wait.
        warning (str | Unset): Set when no wait step of the run's definition waits for the event's name: the event is
            kept, but nothing will consume it (a typo?).
    """

    duplicate: bool
    recorded: bool
    resumed: list[str]
    warning: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        duplicate = self.duplicate

        recorded = self.recorded

        resumed = self.resumed

        warning = self.warning

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "duplicate": duplicate,
                "recorded": recorded,
                "resumed": resumed,
            }
        )
        if warning is not UNSET:
            field_dict["warning"] = warning

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        duplicate = d.pop("duplicate")

        recorded = d.pop("recorded")

        resumed = cast(list[str], d.pop("resumed"))

        warning = d.pop("warning", UNSET)

        event_result = cls(
            duplicate=duplicate,
            recorded=recorded,
            resumed=resumed,
            warning=warning,
        )

        return event_result

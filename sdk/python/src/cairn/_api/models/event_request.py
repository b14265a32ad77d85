from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="EventRequest")


@_attrs_define
class EventRequest:
    """
    Attributes:
        name (str): Event name; resumes wait steps waiting for it. Any text without control characters.
        id (str | Unset): Optional event id: an event whose id the run has seen is ignored (safe retries). Any text
            without control characters.
        payload (Any | Unset): Any JSON: the output of the wait step it resumes.
    """

    name: str
    id: str | Unset = UNSET
    payload: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        id = self.id

        payload = self.payload

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        id = d.pop("id", UNSET)

        payload = d.pop("payload", UNSET)

        event_request = cls(
            name=name,
            id=id,
            payload=payload,
        )

        return event_request

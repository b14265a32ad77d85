from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PublishRequest")


@_attrs_define
class PublishRequest:
    """
    Attributes:
        name (str): The event's name: the triggers of that name are matched. Any text without control characters.
        id (str | Unset): The event's id: publishing it again starts nothing twice (per workflow, the start idempotency
            key event:<id>). Default: a new id, returned.
        payload (Any | Unset): Any JSON: the input of the runs the event starts, and event.payload to the triggers'
            conditions.
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

        publish_request = cls(
            name=name,
            id=id,
            payload=payload,
        )

        return publish_request

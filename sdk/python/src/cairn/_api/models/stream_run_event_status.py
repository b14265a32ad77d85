from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stream_run_event_status_event import StreamRunEventStatusEvent
from ..types import UNSET, Unset

T = TypeVar("T", bound="StreamRunEventStatus")


@_attrs_define
class StreamRunEventStatus:
    """
    Attributes:
        data (str):
        event (StreamRunEventStatusEvent):
        id (str | Unset): rev.seq, on status, journal and end events.
    """

    data: str
    event: StreamRunEventStatusEvent
    id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        event = self.event.value

        id = self.id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "event": event,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        data = d.pop("data")

        event = StreamRunEventStatusEvent(d.pop("event"))

        id = d.pop("id", UNSET)

        stream_run_event_status = cls(
            data=data,
            event=event,
            id=id,
        )

        stream_run_event_status.additional_properties = d
        return stream_run_event_status

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

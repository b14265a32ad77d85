from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="UpdateRequest")


@_attrs_define
class UpdateRequest:
    """
    Attributes:
        name (str): The update's name: the event name a wait step (or a function's wait) of the run waits for.
        id (str | Unset): The update's id: a request sent again with the same id (and the same name and input) answers
            the same update, which the run got once; with another name or input it is a 409. Generated when empty (then a
            retry is a second update).
        input_ (Any | Unset): Any JSON: the output of the wait step that takes it (the payload of an event).
        wait_ms (int | Unset): Hold the request up to this long (capped at 4/5 of the max request time) for the answer;
            0 answers at once. Answered 200 when the update is answered or failed, else 202 with the update to poll.
    """

    name: str
    id: str | Unset = UNSET
    input_: Any | Unset = UNSET
    wait_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        id = self.id

        input_ = self.input_

        wait_ms = self.wait_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id
        if input_ is not UNSET:
            field_dict["input"] = input_
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        id = d.pop("id", UNSET)

        input_ = d.pop("input", UNSET)

        wait_ms = d.pop("wait_ms", UNSET)

        update_request = cls(
            name=name,
            id=id,
            input_=input_,
            wait_ms=wait_ms,
        )

        return update_request

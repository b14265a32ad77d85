from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.triggered_run import TriggeredRun


T = TypeVar("T", bound="PublishResult")


@_attrs_define
class PublishResult:
    """
    Attributes:
        cancelled (list[str]): The running runs the event cancelled (their workflows' cancel_on matched it); empty when
            none.
        id (str): The event's id (the one given, or the one made).
        runs (list[TriggeredRun]): One per workflow whose trigger the event matched, in workflow name order.
        truncated (bool | Unset): More workflows than the server's limit have a trigger of this name: only the first (by
            name) were matched.
    """

    cancelled: list[str]
    id: str
    runs: list[TriggeredRun]
    truncated: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        id = self.id

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        truncated = self.truncated

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cancelled": cancelled,
                "id": id,
                "runs": runs,
            }
        )
        if truncated is not UNSET:
            field_dict["truncated"] = truncated

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.triggered_run import TriggeredRun  # noqa: PLC0415

        d = dict(src_dict)
        cancelled = cast(list[str], d.pop("cancelled"))

        id = d.pop("id")

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = TriggeredRun.from_dict(runs_item_data)

            runs.append(runs_item)

        truncated = d.pop("truncated", UNSET)

        publish_result = cls(
            cancelled=cancelled,
            id=id,
            runs=runs,
            truncated=truncated,
        )

        return publish_result

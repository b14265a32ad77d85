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
        id (str): The event's id (the one given, or the one made).
        runs (list[TriggeredRun]): One per workflow whose trigger the event matched, in workflow name order.
        cancelled (list[str] | None | Unset): The running runs the event cancelled (their workflows' cancel_on matched
            it).
        truncated (bool | Unset): More workflows than the server's limit have a trigger of this name: only the first (by
            name) were matched.
    """

    id: str
    runs: list[TriggeredRun]
    cancelled: list[str] | None | Unset = UNSET
    truncated: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        cancelled: list[str] | None | Unset
        if isinstance(self.cancelled, Unset):
            cancelled = UNSET
        elif isinstance(self.cancelled, list):
            cancelled = self.cancelled

        else:
            cancelled = self.cancelled

        truncated = self.truncated

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "runs": runs,
            }
        )
        if cancelled is not UNSET:
            field_dict["cancelled"] = cancelled
        if truncated is not UNSET:
            field_dict["truncated"] = truncated

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.triggered_run import TriggeredRun  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = TriggeredRun.from_dict(runs_item_data)

            runs.append(runs_item)

        def _parse_cancelled(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                cancelled_type_0 = cast(list[str], data)

                return cancelled_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        cancelled = _parse_cancelled(d.pop("cancelled", UNSET))

        truncated = d.pop("truncated", UNSET)

        publish_result = cls(
            id=id,
            runs=runs,
            cancelled=cancelled,
            truncated=truncated,
        )

        return publish_result

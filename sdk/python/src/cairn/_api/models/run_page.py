from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run_summary import RunSummary


T = TypeVar("T", bound="RunPage")


@_attrs_define
class RunPage:
    """
    Attributes:
        runs (list[RunSummary]):
        next_cursor (str | Unset): Pass as cursor for the next page; absent on the last. A filtered page may hold fewer
            runs than the limit and still have a next page.
    """

    runs: list[RunSummary]
    next_cursor: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "runs": runs,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run_summary import RunSummary  # noqa: PLC0415

        d = dict(src_dict)
        runs = []
        _runs = d.pop("runs")
        for runs_item_data in _runs:
            runs_item = RunSummary.from_dict(runs_item_data)

            runs.append(runs_item)

        next_cursor = d.pop("next_cursor", UNSET)

        run_page = cls(
            runs=runs,
            next_cursor=next_cursor,
        )

        return run_page

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo


T = TypeVar("T", bound="MapProgress")


@_attrs_define
class MapProgress:
    """
    Attributes:
        completed (int):
        errors (list[ErrorInfo]): The first item errors (step names the item as <step>.<index>).
        failed (int): Items that failed for good (tolerated, or the one that failed the step).
        running (int): Items started and not finished.
        total (int): Items in all.
    """

    completed: int
    errors: list[ErrorInfo]
    failed: int
    running: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        completed = self.completed

        errors = []
        for errors_item_data in self.errors:
            errors_item = errors_item_data.to_dict()
            errors.append(errors_item)

        failed = self.failed

        running = self.running

        total = self.total

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "completed": completed,
                "errors": errors,
                "failed": failed,
                "running": running,
                "total": total,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415

        d = dict(src_dict)
        completed = d.pop("completed")

        errors = []
        _errors = d.pop("errors")
        for errors_item_data in _errors:
            errors_item = ErrorInfo.from_dict(errors_item_data)

            errors.append(errors_item)

        failed = d.pop("failed")

        running = d.pop("running")

        total = d.pop("total")

        map_progress = cls(
            completed=completed,
            errors=errors,
            failed=failed,
            running=running,
            total=total,
        )

        return map_progress

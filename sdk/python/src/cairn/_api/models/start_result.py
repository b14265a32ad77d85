from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.run import Run


T = TypeVar("T", bound="StartResult")


@_attrs_define
class StartResult:
    """
    Attributes:
        existed (bool): True when the idempotency key named a run started earlier.
        run (Run):
    """

    existed: bool
    run: Run

    def to_dict(self) -> dict[str, Any]:
        existed = self.existed

        run = self.run.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "existed": existed,
                "run": run,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run import Run  # noqa: PLC0415

        d = dict(src_dict)
        existed = d.pop("existed")

        run = Run.from_dict(d.pop("run"))

        start_result = cls(
            existed=existed,
            run=run,
        )

        return start_result

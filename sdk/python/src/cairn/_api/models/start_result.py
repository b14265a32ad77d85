from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.run import Run


T = TypeVar("T", bound="StartResult")


@_attrs_define
class StartResult:
    """
    Attributes:
        existed (bool): True when the idempotency key named a run started earlier, or a singleton key a running run
            (skipped).
        run (Run):
        skipped (bool | Unset): True when the workflow's singleton key was held by a running run: nothing started, run
            is that run.
    """

    existed: bool
    run: Run
    skipped: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        existed = self.existed

        run = self.run.to_dict()

        skipped = self.skipped

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "existed": existed,
                "run": run,
            }
        )
        if skipped is not UNSET:
            field_dict["skipped"] = skipped

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.run import Run  # noqa: PLC0415

        d = dict(src_dict)
        existed = d.pop("existed")

        run = Run.from_dict(d.pop("run"))

        skipped = d.pop("skipped", UNSET)

        start_result = cls(
            existed=existed,
            run=run,
            skipped=skipped,
        )

        return start_result

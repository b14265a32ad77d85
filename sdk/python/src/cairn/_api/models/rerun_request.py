from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RerunRequest")


@_attrs_define
class RerunRequest:
    """
    Attributes:
        from_step (str | Unset): Run this step and every step after it again; every other step that completed in the old
            run is reused with its output. Empty: reuse every completed step, run the rest (a retry of what failed).
        idempotency_key (str | Unset): Rerunning twice with the same key (per workflow) returns the first rerun.
    """

    from_step: str | Unset = UNSET
    idempotency_key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_step = self.from_step

        idempotency_key = self.idempotency_key

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if from_step is not UNSET:
            field_dict["from_step"] = from_step
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_step = d.pop("from_step", UNSET)

        idempotency_key = d.pop("idempotency_key", UNSET)

        rerun_request = cls(
            from_step=from_step,
            idempotency_key=idempotency_key,
        )

        return rerun_request

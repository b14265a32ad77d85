from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.checkpointed_run_status import CheckpointedRunStatus

T = TypeVar("T", bound="Checkpointed")


@_attrs_define
class Checkpointed:
    """
    Attributes:
        operations (int): The history's length now.
        run_status (CheckpointedRunStatus):
    """

    operations: int
    run_status: CheckpointedRunStatus

    def to_dict(self) -> dict[str, Any]:
        operations = self.operations

        run_status = self.run_status.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "operations": operations,
                "run_status": run_status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        operations = d.pop("operations")

        run_status = CheckpointedRunStatus(d.pop("run_status"))

        checkpointed = cls(
            operations=operations,
            run_status=run_status,
        )

        return checkpointed

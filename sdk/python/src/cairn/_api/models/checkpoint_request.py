from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.operation import Operation
    from ..models.suspension import Suspension
    from ..models.usage import Usage


T = TypeVar("T", bound="CheckpointRequest")


@_attrs_define
class CheckpointRequest:
    """
    Attributes:
        operations (list[Operation]): Operations to add to the step's history, in order: each one's seq continues the
            history (an operation already recorded at its seq is skipped, so a checkpoint sent again adds nothing).
        suspend (Suspension | Unset):
        usage (Usage | Unset):
    """

    operations: list[Operation]
    suspend: Suspension | Unset = UNSET
    usage: Usage | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        operations = []
        for operations_item_data in self.operations:
            operations_item = operations_item_data.to_dict()
            operations.append(operations_item)

        suspend: dict[str, Any] | Unset = UNSET
        if not isinstance(self.suspend, Unset):
            suspend = self.suspend.to_dict()

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "operations": operations,
            }
        )
        if suspend is not UNSET:
            field_dict["suspend"] = suspend
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.operation import Operation  # noqa: PLC0415
        from ..models.suspension import Suspension  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        operations = []
        _operations = d.pop("operations")
        for operations_item_data in _operations:
            operations_item = Operation.from_dict(operations_item_data)

            operations.append(operations_item)

        _suspend = d.pop("suspend", UNSET)
        suspend: Suspension | Unset
        if isinstance(_suspend, Unset):
            suspend = UNSET
        else:
            suspend = Suspension.from_dict(_suspend)

        _usage = d.pop("usage", UNSET)
        usage: Usage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = Usage.from_dict(_usage)

        checkpoint_request = cls(
            operations=operations,
            suspend=suspend,
            usage=usage,
        )

        return checkpoint_request

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.register_request_labels import RegisterRequestLabels
    from ..models.workflow import Workflow


T = TypeVar("T", bound="RegisterRequest")


@_attrs_define
class RegisterRequest:
    """
    Attributes:
        workflows (list[Workflow]): Definitions the worker serves. Each (name, version) is stored once and immutable.
        labels (RegisterRequestLabels | Unset): Free labels shown by cairn workers.
        worker_id (str | Unset): Stable id of the worker process (the SDKs derive it from host and pid). When absent or
            empty the server generates one and returns it: use that id for claims.
    """

    workflows: list[Workflow]
    labels: RegisterRequestLabels | Unset = UNSET
    worker_id: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        workflows = []
        for workflows_item_data in self.workflows:
            workflows_item = workflows_item_data.to_dict()
            workflows.append(workflows_item)

        labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.labels, Unset):
            labels = self.labels.to_dict()

        worker_id = self.worker_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "workflows": workflows,
            }
        )
        if labels is not UNSET:
            field_dict["labels"] = labels
        if worker_id is not UNSET:
            field_dict["worker_id"] = worker_id

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.register_request_labels import RegisterRequestLabels  # noqa: PLC0415
        from ..models.workflow import Workflow  # noqa: PLC0415

        d = dict(src_dict)
        workflows = []
        _workflows = d.pop("workflows")
        for workflows_item_data in _workflows:
            workflows_item = Workflow.from_dict(workflows_item_data)

            workflows.append(workflows_item)

        _labels = d.pop("labels", UNSET)
        labels: RegisterRequestLabels | Unset
        if isinstance(_labels, Unset):
            labels = UNSET
        else:
            labels = RegisterRequestLabels.from_dict(_labels)

        worker_id = d.pop("worker_id", UNSET)

        register_request = cls(
            workflows=workflows,
            labels=labels,
            worker_id=worker_id,
        )

        return register_request

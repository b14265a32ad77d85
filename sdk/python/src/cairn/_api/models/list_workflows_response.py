from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.workflow_summary import WorkflowSummary


T = TypeVar("T", bound="ListWorkflowsResponse")


@_attrs_define
class ListWorkflowsResponse:
    """
    Attributes:
        workflows (list[WorkflowSummary]):
    """

    workflows: list[WorkflowSummary]

    def to_dict(self) -> dict[str, Any]:
        workflows = []
        for workflows_item_data in self.workflows:
            workflows_item = workflows_item_data.to_dict()
            workflows.append(workflows_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "workflows": workflows,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.workflow_summary import WorkflowSummary  # noqa: PLC0415

        d = dict(src_dict)
        workflows = []
        _workflows = d.pop("workflows")
        for workflows_item_data in _workflows:
            workflows_item = WorkflowSummary.from_dict(workflows_item_data)

            workflows.append(workflows_item)

        list_workflows_response = cls(
            workflows=workflows,
        )

        return list_workflows_response

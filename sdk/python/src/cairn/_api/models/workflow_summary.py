from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="WorkflowSummary")


@_attrs_define
class WorkflowSummary:
    """
    Attributes:
        latest (str): Newest registered version: the default for new runs.
        name (str):
        versions (list[str]): Every registered version, oldest first.
    """

    latest: str
    name: str
    versions: list[str]

    def to_dict(self) -> dict[str, Any]:
        latest = self.latest

        name = self.name

        versions = self.versions

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "latest": latest,
                "name": name,
                "versions": versions,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        latest = d.pop("latest")

        name = d.pop("name")

        versions = cast(list[str], d.pop("versions"))

        workflow_summary = cls(
            latest=latest,
            name=name,
            versions=versions,
        )

        return workflow_summary

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Invocation")


@_attrs_define
class Invocation:
    """
    Attributes:
        workflow (str): The workflow to run (a DAG or a function, served by any worker).
        input_ (Any | Unset): The run's input.
        version (str | Unset): Its version; the newest when the run starts if empty.
    """

    workflow: str
    input_: Any | Unset = UNSET
    version: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        workflow = self.workflow

        input_ = self.input_

        version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "workflow": workflow,
            }
        )
        if input_ is not UNSET:
            field_dict["input"] = input_
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        workflow = d.pop("workflow")

        input_ = d.pop("input", UNSET)

        version = d.pop("version", UNSET)

        invocation = cls(
            workflow=workflow,
            input_=input_,
            version=version,
        )

        return invocation

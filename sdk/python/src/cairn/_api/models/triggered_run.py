from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TriggeredRun")


@_attrs_define
class TriggeredRun:
    """
    Attributes:
        run (str):
        version (str):
        workflow (str):
        existed (bool | Unset): The event's id had started it already (a retried publish): nothing was started.
        window (str | Unset): The workflow debounces or batches its events: the event joined this window, whose run
            starts when it closes (run is then empty).
    """

    run: str
    version: str
    workflow: str
    existed: bool | Unset = UNSET
    window: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        run = self.run

        version = self.version

        workflow = self.workflow

        existed = self.existed

        window = self.window

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "run": run,
                "version": version,
                "workflow": workflow,
            }
        )
        if existed is not UNSET:
            field_dict["existed"] = existed
        if window is not UNSET:
            field_dict["window"] = window

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        run = d.pop("run")

        version = d.pop("version")

        workflow = d.pop("workflow")

        existed = d.pop("existed", UNSET)

        window = d.pop("window", UNSET)

        triggered_run = cls(
            run=run,
            version=version,
            workflow=workflow,
            existed=existed,
            window=window,
        )

        return triggered_run

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BuildInfo")


@_attrs_define
class BuildInfo:
    """
    Attributes:
        go (str):
        version (str): Module version, or devel for a build from a checkout.
        modified (bool | Unset): The checkout had uncommitted changes.
        revision (str | Unset): VCS revision the binary was built from.
        time (str | Unset): Commit time of that revision.
    """

    go: str
    version: str
    modified: bool | Unset = UNSET
    revision: str | Unset = UNSET
    time: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        go = self.go

        version = self.version

        modified = self.modified

        revision = self.revision

        time = self.time

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "go": go,
                "version": version,
            }
        )
        if modified is not UNSET:
            field_dict["modified"] = modified
        if revision is not UNSET:
            field_dict["revision"] = revision
        if time is not UNSET:
            field_dict["time"] = time

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        go = d.pop("go")

        version = d.pop("version")

        modified = d.pop("modified", UNSET)

        revision = d.pop("revision", UNSET)

        time = d.pop("time", UNSET)

        build_info = cls(
            go=go,
            version=version,
            modified=modified,
            revision=revision,
            time=time,
        )

        return build_info

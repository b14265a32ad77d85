from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.build_info import BuildInfo


T = TypeVar("T", bound="ReadyResponse")


@_attrs_define
class ReadyResponse:
    """
    Attributes:
        build (BuildInfo):
        status (str):
    """

    build: BuildInfo
    status: str

    def to_dict(self) -> dict[str, Any]:
        build = self.build.to_dict()

        status = self.status

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "build": build,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.build_info import BuildInfo  # noqa: PLC0415

        d = dict(src_dict)
        build = BuildInfo.from_dict(d.pop("build"))

        status = d.pop("status")

        ready_response = cls(
            build=build,
            status=status,
        )

        return ready_response

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.build_info import BuildInfo


T = TypeVar("T", bound="HealthResponse")


@_attrs_define
class HealthResponse:
    """
    Attributes:
        build (BuildInfo):
        held_claims (int): Claims this instance holds now, waiting for work. Tools and tests wait on it instead of
            sleeping.
        status (str):
    """

    build: BuildInfo
    held_claims: int
    status: str

    def to_dict(self) -> dict[str, Any]:
        build = self.build.to_dict()

        held_claims = self.held_claims

        status = self.status

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "build": build,
                "held_claims": held_claims,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.build_info import BuildInfo  # noqa: PLC0415

        d = dict(src_dict)
        build = BuildInfo.from_dict(d.pop("build"))

        held_claims = d.pop("held_claims")

        status = d.pop("status")

        health_response = cls(
            build=build,
            held_claims=held_claims,
            status=status,
        )

        return health_response

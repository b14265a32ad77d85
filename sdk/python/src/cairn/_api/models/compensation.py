from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.compensation_status import CompensationStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo


T = TypeVar("T", bound="Compensation")


@_attrs_define
class Compensation:
    """
    Attributes:
        status (CompensationStatus):
        error (ErrorInfo | Unset):
        failure (ErrorInfo | Unset):
    """

    status: CompensationStatus
    error: ErrorInfo | Unset = UNSET
    failure: ErrorInfo | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        failure: dict[str, Any] | Unset = UNSET
        if not isinstance(self.failure, Unset):
            failure = self.failure.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if failure is not UNSET:
            field_dict["failure"] = failure

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415

        d = dict(src_dict)
        status = CompensationStatus(d.pop("status"))

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        _failure = d.pop("failure", UNSET)
        failure: ErrorInfo | Unset
        if isinstance(_failure, Unset):
            failure = UNSET
        else:
            failure = ErrorInfo.from_dict(_failure)

        compensation = cls(
            status=status,
            error=error,
            failure=failure,
        )

        return compensation

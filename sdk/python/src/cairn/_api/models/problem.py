from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.problem_reason import ProblemReason
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_detail import ErrorDetail


T = TypeVar("T", bound="Problem")


@_attrs_define
class Problem:
    """
    Attributes:
        status (int): HTTP status code
        title (str): A short, human-readable summary of the problem type. This value should not change between
            occurrences of the error.
        type_ (str): A URI reference to human-readable documentation for the error. Default: 'about:blank'.
        detail (str | Unset): A human-readable explanation specific to this occurrence of the problem.
        errors (list[ErrorDetail] | Unset): Optional list of individual error details
        instance (str | Unset): A URI reference that identifies the specific occurrence of the problem.
        reason (ProblemReason | Unset): On a 409 to a worker call: why the call was refused. SDKs branch on it.
    """

    status: int
    title: str
    type_: str = "about:blank"
    detail: str | Unset = UNSET
    errors: list[ErrorDetail] | Unset = UNSET
    instance: str | Unset = UNSET
    reason: ProblemReason | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        status = self.status

        title = self.title

        type_ = self.type_

        detail = self.detail

        errors: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.errors, Unset):
            errors = []
            for errors_item_data in self.errors:
                errors_item = errors_item_data.to_dict()
                errors.append(errors_item)

        instance = self.instance

        reason: str | Unset = UNSET
        if not isinstance(self.reason, Unset):
            reason = self.reason.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "status": status,
                "title": title,
                "type": type_,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail
        if errors is not UNSET:
            field_dict["errors"] = errors
        if instance is not UNSET:
            field_dict["instance"] = instance
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_detail import ErrorDetail  # noqa: PLC0415

        d = dict(src_dict)
        status = d.pop("status")

        title = d.pop("title")

        type_ = d.pop("type")

        detail = d.pop("detail", UNSET)

        _errors = d.pop("errors", UNSET)
        errors: list[ErrorDetail] | Unset = UNSET
        if _errors is not UNSET:
            errors = []
            for errors_item_data in _errors:
                errors_item = ErrorDetail.from_dict(errors_item_data)

                errors.append(errors_item)

        instance = d.pop("instance", UNSET)

        _reason = d.pop("reason", UNSET)
        reason: ProblemReason | Unset
        if isinstance(_reason, Unset):
            reason = UNSET
        else:
            reason = ProblemReason(_reason)

        problem = cls(
            status=status,
            title=title,
            type_=type_,
            detail=detail,
            errors=errors,
            instance=instance,
            reason=reason,
        )

        return problem

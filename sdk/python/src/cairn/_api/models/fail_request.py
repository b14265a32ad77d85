from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo
    from ..models.fail_request_state_patch import FailRequestStatePatch
    from ..models.usage import Usage


T = TypeVar("T", bound="FailRequest")


@_attrs_define
class FailRequest:
    """
    Attributes:
        error (ErrorInfo):
        state_patch (FailRequestStatePatch | Unset): Merged into the run state even on failure.
        summary (Any | Unset): A short summary of the attempt (any JSON, at most 4 KiB), recorded on the attempt: what
            it did before it failed.
        usage (Usage | Unset):
    """

    error: ErrorInfo
    state_patch: FailRequestStatePatch | Unset = UNSET
    summary: Any | Unset = UNSET
    usage: Usage | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        error = self.error.to_dict()

        state_patch: dict[str, Any] | Unset = UNSET
        if not isinstance(self.state_patch, Unset):
            state_patch = self.state_patch.to_dict()

        summary = self.summary

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "error": error,
            }
        )
        if state_patch is not UNSET:
            field_dict["state_patch"] = state_patch
        if summary is not UNSET:
            field_dict["summary"] = summary
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.fail_request_state_patch import FailRequestStatePatch  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        error = ErrorInfo.from_dict(d.pop("error"))

        _state_patch = d.pop("state_patch", UNSET)
        state_patch: FailRequestStatePatch | Unset
        if isinstance(_state_patch, Unset):
            state_patch = UNSET
        else:
            state_patch = FailRequestStatePatch.from_dict(_state_patch)

        summary = d.pop("summary", UNSET)

        _usage = d.pop("usage", UNSET)
        usage: Usage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = Usage.from_dict(_usage)

        fail_request = cls(
            error=error,
            state_patch=state_patch,
            summary=summary,
            usage=usage,
        )

        return fail_request

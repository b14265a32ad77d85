from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.interrupt_request_state_patch import InterruptRequestStatePatch
    from ..models.usage import Usage


T = TypeVar("T", bound="InterruptRequest")


@_attrs_define
class InterruptRequest:
    """
    Attributes:
        payload (Any | Unset): What to show whoever resumes the step (a question, a draft to approve): any JSON, at most
            64 KiB. Kept in the run record as sent (not encrypted).
        state_patch (InterruptRequestStatePatch | Unset): Merged into the run state, as a complete's.
        summary (Any | Unset): A short summary of the attempt (any JSON, at most 4 KiB).
        usage (Usage | Unset):
    """

    payload: Any | Unset = UNSET
    state_patch: InterruptRequestStatePatch | Unset = UNSET
    summary: Any | Unset = UNSET
    usage: Usage | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        payload = self.payload

        state_patch: dict[str, Any] | Unset = UNSET
        if not isinstance(self.state_patch, Unset):
            state_patch = self.state_patch.to_dict()

        summary = self.summary

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if payload is not UNSET:
            field_dict["payload"] = payload
        if state_patch is not UNSET:
            field_dict["state_patch"] = state_patch
        if summary is not UNSET:
            field_dict["summary"] = summary
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.interrupt_request_state_patch import InterruptRequestStatePatch  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        payload = d.pop("payload", UNSET)

        _state_patch = d.pop("state_patch", UNSET)
        state_patch: InterruptRequestStatePatch | Unset
        if isinstance(_state_patch, Unset):
            state_patch = UNSET
        else:
            state_patch = InterruptRequestStatePatch.from_dict(_state_patch)

        summary = d.pop("summary", UNSET)

        _usage = d.pop("usage", UNSET)
        usage: Usage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = Usage.from_dict(_usage)

        interrupt_request = cls(
            payload=payload,
            state_patch=state_patch,
            summary=summary,
            usage=usage,
        )

        return interrupt_request

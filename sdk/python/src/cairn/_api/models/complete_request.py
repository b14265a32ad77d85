from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.claim_next import ClaimNext
    from ..models.complete_request_attributes import CompleteRequestAttributes
    from ..models.complete_request_state_patch import CompleteRequestStatePatch
    from ..models.continue_as_new import ContinueAsNew
    from ..models.usage import Usage


T = TypeVar("T", bound="CompleteRequest")


@_attrs_define
class CompleteRequest:
    """
    Attributes:
        attributes (CompleteRequestAttributes | Unset): Sets the run's search attributes (as at start); null removes
            one.
        claim_next (ClaimNext | Unset):
        continue_as_new (ContinueAsNew | Unset):
        output (Any | Unset): The step's output, any JSON.
        state_patch (CompleteRequestStatePatch | Unset): Merged into the run state: top-level keys replace.
        summary (Any | Unset): A short summary of the attempt (any JSON, at most 4 KiB), recorded on the attempt for
            timelines and audits and never read by the flow.
        usage (Usage | Unset):
    """

    attributes: CompleteRequestAttributes | Unset = UNSET
    claim_next: ClaimNext | Unset = UNSET
    continue_as_new: ContinueAsNew | Unset = UNSET
    output: Any | Unset = UNSET
    state_patch: CompleteRequestStatePatch | Unset = UNSET
    summary: Any | Unset = UNSET
    usage: Usage | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        attributes: dict[str, Any] | Unset = UNSET
        if not isinstance(self.attributes, Unset):
            attributes = self.attributes.to_dict()

        claim_next: dict[str, Any] | Unset = UNSET
        if not isinstance(self.claim_next, Unset):
            claim_next = self.claim_next.to_dict()

        continue_as_new: dict[str, Any] | Unset = UNSET
        if not isinstance(self.continue_as_new, Unset):
            continue_as_new = self.continue_as_new.to_dict()

        output = self.output

        state_patch: dict[str, Any] | Unset = UNSET
        if not isinstance(self.state_patch, Unset):
            state_patch = self.state_patch.to_dict()

        summary = self.summary

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if attributes is not UNSET:
            field_dict["attributes"] = attributes
        if claim_next is not UNSET:
            field_dict["claim_next"] = claim_next
        if continue_as_new is not UNSET:
            field_dict["continue_as_new"] = continue_as_new
        if output is not UNSET:
            field_dict["output"] = output
        if state_patch is not UNSET:
            field_dict["state_patch"] = state_patch
        if summary is not UNSET:
            field_dict["summary"] = summary
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.claim_next import ClaimNext  # noqa: PLC0415
        from ..models.complete_request_attributes import CompleteRequestAttributes  # noqa: PLC0415
        from ..models.complete_request_state_patch import CompleteRequestStatePatch  # noqa: PLC0415
        from ..models.continue_as_new import ContinueAsNew  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        _attributes = d.pop("attributes", UNSET)
        attributes: CompleteRequestAttributes | Unset
        if isinstance(_attributes, Unset):
            attributes = UNSET
        else:
            attributes = CompleteRequestAttributes.from_dict(_attributes)

        _claim_next = d.pop("claim_next", UNSET)
        claim_next: ClaimNext | Unset
        if isinstance(_claim_next, Unset):
            claim_next = UNSET
        else:
            claim_next = ClaimNext.from_dict(_claim_next)

        _continue_as_new = d.pop("continue_as_new", UNSET)
        continue_as_new: ContinueAsNew | Unset
        if isinstance(_continue_as_new, Unset):
            continue_as_new = UNSET
        else:
            continue_as_new = ContinueAsNew.from_dict(_continue_as_new)

        output = d.pop("output", UNSET)

        _state_patch = d.pop("state_patch", UNSET)
        state_patch: CompleteRequestStatePatch | Unset
        if isinstance(_state_patch, Unset):
            state_patch = UNSET
        else:
            state_patch = CompleteRequestStatePatch.from_dict(_state_patch)

        summary = d.pop("summary", UNSET)

        _usage = d.pop("usage", UNSET)
        usage: Usage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = Usage.from_dict(_usage)

        complete_request = cls(
            attributes=attributes,
            claim_next=claim_next,
            continue_as_new=continue_as_new,
            output=output,
            state_patch=state_patch,
            summary=summary,
            usage=usage,
        )

        return complete_request

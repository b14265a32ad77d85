from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.invocation import Invocation


T = TypeVar("T", bound="Suspension")


@_attrs_define
class Suspension:
    """
    Attributes:
        event (str | Unset): An event sent to the run that makes the next attempt claimable at once, recorded as op's
            outcome (its payload the result).
        invoke (Invocation | Unset):
        op (str | Unset): With event or invoke: the id of the operation the event or the run's end completes.
        until (datetime.datetime | Unset): When the next attempt becomes claimable (a sleep's end, a wait's timeout; a
            time past is now). Required without op.
    """

    event: str | Unset = UNSET
    invoke: Invocation | Unset = UNSET
    op: str | Unset = UNSET
    until: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        event = self.event

        invoke: dict[str, Any] | Unset = UNSET
        if not isinstance(self.invoke, Unset):
            invoke = self.invoke.to_dict()

        op = self.op

        until: str | Unset = UNSET
        if not isinstance(self.until, Unset):
            until = self.until.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if event is not UNSET:
            field_dict["event"] = event
        if invoke is not UNSET:
            field_dict["invoke"] = invoke
        if op is not UNSET:
            field_dict["op"] = op
        if until is not UNSET:
            field_dict["until"] = until

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.invocation import Invocation  # noqa: PLC0415

        d = dict(src_dict)
        event = d.pop("event", UNSET)

        _invoke = d.pop("invoke", UNSET)
        invoke: Invocation | Unset
        if isinstance(_invoke, Unset):
            invoke = UNSET
        else:
            invoke = Invocation.from_dict(_invoke)

        op = d.pop("op", UNSET)

        _until = d.pop("until", UNSET)
        until: datetime.datetime | Unset
        if isinstance(_until, Unset):
            until = UNSET
        else:
            until = datetime.datetime.fromisoformat(_until)

        suspension = cls(
            event=event,
            invoke=invoke,
            op=op,
            until=until,
        )

        return suspension

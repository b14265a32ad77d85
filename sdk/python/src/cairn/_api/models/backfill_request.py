from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BackfillRequest")


@_attrs_define
class BackfillRequest:
    """
    Attributes:
        from_ (datetime.datetime): Ticks after this time (exclusive)...
        to (datetime.datetime): ...up to this time (inclusive), at most now.
        max_ (int | Unset): At most this many ticks, oldest first (default and cap 100).
    """

    from_: datetime.datetime
    to: datetime.datetime
    max_: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_ = self.from_.isoformat()

        to = self.to.isoformat()

        max_ = self.max_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "from": from_,
                "to": to,
            }
        )
        if max_ is not UNSET:
            field_dict["max"] = max_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_ = datetime.datetime.fromisoformat(d.pop("from"))

        to = datetime.datetime.fromisoformat(d.pop("to"))

        max_ = d.pop("max", UNSET)

        backfill_request = cls(
            from_=from_,
            to=to,
            max_=max_,
        )

        return backfill_request

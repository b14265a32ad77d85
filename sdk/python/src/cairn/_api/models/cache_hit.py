from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="CacheHit")


@_attrs_define
class CacheHit:
    """
    Attributes:
        attempt (int): That attempt's number.
        run (str): The run whose attempt computed the output.
        written_at (datetime.datetime): When the entry was written.
    """

    attempt: int
    run: str
    written_at: datetime.datetime

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        run = self.run

        written_at = self.written_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "attempt": attempt,
                "run": run,
                "written_at": written_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        run = d.pop("run")

        written_at = datetime.datetime.fromisoformat(d.pop("written_at"))

        cache_hit = cls(
            attempt=attempt,
            run=run,
            written_at=written_at,
        )

        return cache_hit

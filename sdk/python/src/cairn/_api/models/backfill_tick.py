from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="BackfillTick")


@_attrs_define
class BackfillTick:
    """
    Attributes:
        existed (bool): The tick already had its run (fired earlier, or an earlier backfill): nothing new started.
        run (str):
        tick (datetime.datetime):
    """

    existed: bool
    run: str
    tick: datetime.datetime

    def to_dict(self) -> dict[str, Any]:
        existed = self.existed

        run = self.run

        tick = self.tick.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "existed": existed,
                "run": run,
                "tick": tick,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        existed = d.pop("existed")

        run = d.pop("run")

        tick = datetime.datetime.fromisoformat(d.pop("tick"))

        backfill_tick = cls(
            existed=existed,
            run=run,
            tick=tick,
        )

        return backfill_tick

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.schedule_overlap import ScheduleOverlap
from ..types import UNSET, Unset

T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """
    Attributes:
        created_at (datetime.datetime):
        cron (str):
        failed (int): Ticks whose run could not be started.
        fired (int): Ticks that started a run (backfills not counted).
        id (str):
        missed (int): Ticks that passed while no reaper ran; only the newest of a gap fires (backfill the others).
        overlap (ScheduleOverlap):
        paused (bool):
        rev (int):
        skipped (int): Ticks skipped because the previous run still ran (overlap skip).
        time_zone (str):
        updated_at (datetime.datetime):
        workflow (str):
        description (str | Unset):
        input_ (Any | Unset):
        last_error (str | Unset): Why the newest failed tick could not start a run (e.g. the workflow is not
            registered).
        last_run (str | Unset): The run the newest tick started.
        last_tick (datetime.datetime | Unset): The newest tick that started a run.
        next_at (datetime.datetime | Unset): The next tick; absent while paused.
        pending (datetime.datetime | Unset): A tick whose run is being started.
        version (str | Unset):
    """

    created_at: datetime.datetime
    cron: str
    failed: int
    fired: int
    id: str
    missed: int
    overlap: ScheduleOverlap
    paused: bool
    rev: int
    skipped: int
    time_zone: str
    updated_at: datetime.datetime
    workflow: str
    description: str | Unset = UNSET
    input_: Any | Unset = UNSET
    last_error: str | Unset = UNSET
    last_run: str | Unset = UNSET
    last_tick: datetime.datetime | Unset = UNSET
    next_at: datetime.datetime | Unset = UNSET
    pending: datetime.datetime | Unset = UNSET
    version: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        cron = self.cron

        failed = self.failed

        fired = self.fired

        id = self.id

        missed = self.missed

        overlap = self.overlap.value

        paused = self.paused

        rev = self.rev

        skipped = self.skipped

        time_zone = self.time_zone

        updated_at = self.updated_at.isoformat()

        workflow = self.workflow

        description = self.description

        input_ = self.input_

        last_error = self.last_error

        last_run = self.last_run

        last_tick: str | Unset = UNSET
        if not isinstance(self.last_tick, Unset):
            last_tick = self.last_tick.isoformat()

        next_at: str | Unset = UNSET
        if not isinstance(self.next_at, Unset):
            next_at = self.next_at.isoformat()

        pending: str | Unset = UNSET
        if not isinstance(self.pending, Unset):
            pending = self.pending.isoformat()

        version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "created_at": created_at,
                "cron": cron,
                "failed": failed,
                "fired": fired,
                "id": id,
                "missed": missed,
                "overlap": overlap,
                "paused": paused,
                "rev": rev,
                "skipped": skipped,
                "time_zone": time_zone,
                "updated_at": updated_at,
                "workflow": workflow,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if input_ is not UNSET:
            field_dict["input"] = input_
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if last_run is not UNSET:
            field_dict["last_run"] = last_run
        if last_tick is not UNSET:
            field_dict["last_tick"] = last_tick
        if next_at is not UNSET:
            field_dict["next_at"] = next_at
        if pending is not UNSET:
            field_dict["pending"] = pending
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        cron = d.pop("cron")

        failed = d.pop("failed")

        fired = d.pop("fired")

        id = d.pop("id")

        missed = d.pop("missed")

        overlap = ScheduleOverlap(d.pop("overlap"))

        paused = d.pop("paused")

        rev = d.pop("rev")

        skipped = d.pop("skipped")

        time_zone = d.pop("time_zone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        workflow = d.pop("workflow")

        description = d.pop("description", UNSET)

        input_ = d.pop("input", UNSET)

        last_error = d.pop("last_error", UNSET)

        last_run = d.pop("last_run", UNSET)

        _last_tick = d.pop("last_tick", UNSET)
        last_tick: datetime.datetime | Unset
        if isinstance(_last_tick, Unset):
            last_tick = UNSET
        else:
            last_tick = datetime.datetime.fromisoformat(_last_tick)

        _next_at = d.pop("next_at", UNSET)
        next_at: datetime.datetime | Unset
        if isinstance(_next_at, Unset):
            next_at = UNSET
        else:
            next_at = datetime.datetime.fromisoformat(_next_at)

        _pending = d.pop("pending", UNSET)
        pending: datetime.datetime | Unset
        if isinstance(_pending, Unset):
            pending = UNSET
        else:
            pending = datetime.datetime.fromisoformat(_pending)

        version = d.pop("version", UNSET)

        schedule = cls(
            created_at=created_at,
            cron=cron,
            failed=failed,
            fired=fired,
            id=id,
            missed=missed,
            overlap=overlap,
            paused=paused,
            rev=rev,
            skipped=skipped,
            time_zone=time_zone,
            updated_at=updated_at,
            workflow=workflow,
            description=description,
            input_=input_,
            last_error=last_error,
            last_run=last_run,
            last_tick=last_tick,
            next_at=next_at,
            pending=pending,
            version=version,
        )

        return schedule

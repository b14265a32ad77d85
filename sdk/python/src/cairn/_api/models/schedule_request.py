from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.schedule_request_overlap import ScheduleRequestOverlap
from ..types import UNSET, Unset

T = TypeVar("T", bound="ScheduleRequest")


@_attrs_define
class ScheduleRequest:
    """
    Attributes:
        cron (str): Five-field cron expression (minute hour day-of-month month day-of-week) or a descriptor (@hourly,
            @daily, @weekly, @monthly, @yearly, @every <duration> of at least 1m).
        workflow (str): Workflow to start.
        description (str | Unset): Free text.
        id (str | Unset): Schedule id; default a generated one. Creating an id that exists is a 409.
        input_ (Any | Unset): Input of every run it starts, any JSON value. Each run's correlation is
            schedule:<id>:<tick>, so templates see the tick as run.correlation.
        overlap (ScheduleRequestOverlap | Unset): What a tick does while the previous run of the schedule still runs:
            skip the tick (default), allow a second run, or cancel_previous and start.
        paused (bool | Unset): Create the schedule paused.
        time_zone (str | Unset): IANA time zone the expression is read in (default UTC), e.g. Europe/Paris. Across a
            daylight-saving change a tick in the skipped hour does not fire and a tick in the repeated hour fires once.
        version (str | Unset): Version to start; default the newest registered at each tick.
    """

    cron: str
    workflow: str
    description: str | Unset = UNSET
    id: str | Unset = UNSET
    input_: Any | Unset = UNSET
    overlap: ScheduleRequestOverlap | Unset = UNSET
    paused: bool | Unset = UNSET
    time_zone: str | Unset = UNSET
    version: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cron = self.cron

        workflow = self.workflow

        description = self.description

        id = self.id

        input_ = self.input_

        overlap: str | Unset = UNSET
        if not isinstance(self.overlap, Unset):
            overlap = self.overlap.value

        paused = self.paused

        time_zone = self.time_zone

        version = self.version

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "cron": cron,
                "workflow": workflow,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if id is not UNSET:
            field_dict["id"] = id
        if input_ is not UNSET:
            field_dict["input"] = input_
        if overlap is not UNSET:
            field_dict["overlap"] = overlap
        if paused is not UNSET:
            field_dict["paused"] = paused
        if time_zone is not UNSET:
            field_dict["time_zone"] = time_zone
        if version is not UNSET:
            field_dict["version"] = version

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cron = d.pop("cron")

        workflow = d.pop("workflow")

        description = d.pop("description", UNSET)

        id = d.pop("id", UNSET)

        input_ = d.pop("input", UNSET)

        _overlap = d.pop("overlap", UNSET)
        overlap: ScheduleRequestOverlap | Unset
        if isinstance(_overlap, Unset):
            overlap = UNSET
        else:
            overlap = ScheduleRequestOverlap(_overlap)

        paused = d.pop("paused", UNSET)

        time_zone = d.pop("time_zone", UNSET)

        version = d.pop("version", UNSET)

        schedule_request = cls(
            cron=cron,
            workflow=workflow,
            description=description,
            id=id,
            input_=input_,
            overlap=overlap,
            paused=paused,
            time_zone=time_zone,
            version=version,
        )

        return schedule_request

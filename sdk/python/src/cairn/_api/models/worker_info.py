from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.worker_info_labels import WorkerInfoLabels


T = TypeVar("T", bound="WorkerInfo")


@_attrs_define
class WorkerInfo:
    """
    Attributes:
        alive (bool): Seen within the alive window (two recording periods plus the longest claim hold), and not stopped
            since it registered: a worker that is polling or running steps is alive.
        id (str):
        last_seen_at (datetime.datetime): The worker's last claim or heartbeat the engine recorded (recorded at most
            once a minute per worker and API instance), or its registration.
        registered_at (datetime.datetime):
        workflows (list[str]): name@version of each definition served.
        labels (WorkerInfoLabels | Unset):
        stopped_at (datetime.datetime | Unset): When the worker said it stopped (its graceful drain ended), if it has
            not registered since.
    """

    alive: bool
    id: str
    last_seen_at: datetime.datetime
    registered_at: datetime.datetime
    workflows: list[str]
    labels: WorkerInfoLabels | Unset = UNSET
    stopped_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        alive = self.alive

        id = self.id

        last_seen_at = self.last_seen_at.isoformat()

        registered_at = self.registered_at.isoformat()

        workflows = self.workflows

        labels: dict[str, Any] | Unset = UNSET
        if not isinstance(self.labels, Unset):
            labels = self.labels.to_dict()

        stopped_at: str | Unset = UNSET
        if not isinstance(self.stopped_at, Unset):
            stopped_at = self.stopped_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "alive": alive,
                "id": id,
                "last_seen_at": last_seen_at,
                "registered_at": registered_at,
                "workflows": workflows,
            }
        )
        if labels is not UNSET:
            field_dict["labels"] = labels
        if stopped_at is not UNSET:
            field_dict["stopped_at"] = stopped_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.worker_info_labels import WorkerInfoLabels  # noqa: PLC0415

        d = dict(src_dict)
        alive = d.pop("alive")

        id = d.pop("id")

        last_seen_at = datetime.datetime.fromisoformat(d.pop("last_seen_at"))

        registered_at = datetime.datetime.fromisoformat(d.pop("registered_at"))

        workflows = cast(list[str], d.pop("workflows"))

        _labels = d.pop("labels", UNSET)
        labels: WorkerInfoLabels | Unset
        if isinstance(_labels, Unset):
            labels = UNSET
        else:
            labels = WorkerInfoLabels.from_dict(_labels)

        _stopped_at = d.pop("stopped_at", UNSET)
        stopped_at: datetime.datetime | Unset
        if isinstance(_stopped_at, Unset):
            stopped_at = UNSET
        else:
            stopped_at = datetime.datetime.fromisoformat(_stopped_at)

        worker_info = cls(
            alive=alive,
            id=id,
            last_seen_at=last_seen_at,
            registered_at=registered_at,
            workflows=workflows,
            labels=labels,
            stopped_at=stopped_at,
        )

        return worker_info

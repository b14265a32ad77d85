from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.worker_info import WorkerInfo


T = TypeVar("T", bound="ListWorkersResponse")


@_attrs_define
class ListWorkersResponse:
    """
    Attributes:
        workers (list[WorkerInfo]):
    """

    workers: list[WorkerInfo]

    def to_dict(self) -> dict[str, Any]:
        workers = []
        for workers_item_data in self.workers:
            workers_item = workers_item_data.to_dict()
            workers.append(workers_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "workers": workers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.worker_info import WorkerInfo  # noqa: PLC0415

        d = dict(src_dict)
        workers = []
        _workers = d.pop("workers")
        for workers_item_data in _workers:
            workers_item = WorkerInfo.from_dict(workers_item_data)

            workers.append(workers_item)

        list_workers_response = cls(
            workers=workers,
        )

        return list_workers_response

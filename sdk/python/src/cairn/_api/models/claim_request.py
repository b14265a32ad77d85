from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClaimRequest")


@_attrs_define
class ClaimRequest:
    """
    Attributes:
        worker_id (str): The id the worker registered with.
        max_ (int | Unset): Most leases to return (default 1).
        run (str | Unset): Only claim steps of this run (a script driving its own run).
        wait_ms (int | Unset): Hold the request up to this long while nothing is ready; capped by the server's claim
            hold (at most 4/5 of its max request time; CAIRN_CLAIM_HOLD). 0 answers at once.
    """

    worker_id: str
    max_: int | Unset = UNSET
    run: str | Unset = UNSET
    wait_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        worker_id = self.worker_id

        max_ = self.max_

        run = self.run

        wait_ms = self.wait_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "worker_id": worker_id,
            }
        )
        if max_ is not UNSET:
            field_dict["max"] = max_
        if run is not UNSET:
            field_dict["run"] = run
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        worker_id = d.pop("worker_id")

        max_ = d.pop("max", UNSET)

        run = d.pop("run", UNSET)

        wait_ms = d.pop("wait_ms", UNSET)

        claim_request = cls(
            worker_id=worker_id,
            max_=max_,
            run=run,
            wait_ms=wait_ms,
        )

        return claim_request

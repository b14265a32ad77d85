from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.journal_entry_type import JournalEntryType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cache_hit import CacheHit
    from ..models.error_info import ErrorInfo


T = TypeVar("T", bound="JournalEntry")


@_attrs_define
class JournalEntry:
    """
    Attributes:
        at (datetime.datetime):
        type_ (JournalEntryType): What happened.
        attempt (int | Unset):
        cached (CacheHit | Unset):
        data (Any | Unset):
        error (ErrorInfo | Unset):
        message (str | Unset):
        step (str | Unset):
        worker (str | Unset):
    """

    at: datetime.datetime
    type_: JournalEntryType
    attempt: int | Unset = UNSET
    cached: CacheHit | Unset = UNSET
    data: Any | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    message: str | Unset = UNSET
    step: str | Unset = UNSET
    worker: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        type_ = self.type_.value

        attempt = self.attempt

        cached: dict[str, Any] | Unset = UNSET
        if not isinstance(self.cached, Unset):
            cached = self.cached.to_dict()

        data = self.data

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        message = self.message

        step = self.step

        worker = self.worker

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "at": at,
                "type": type_,
            }
        )
        if attempt is not UNSET:
            field_dict["attempt"] = attempt
        if cached is not UNSET:
            field_dict["cached"] = cached
        if data is not UNSET:
            field_dict["data"] = data
        if error is not UNSET:
            field_dict["error"] = error
        if message is not UNSET:
            field_dict["message"] = message
        if step is not UNSET:
            field_dict["step"] = step
        if worker is not UNSET:
            field_dict["worker"] = worker

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.cache_hit import CacheHit  # noqa: PLC0415
        from ..models.error_info import ErrorInfo  # noqa: PLC0415

        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        type_ = JournalEntryType(d.pop("type"))

        attempt = d.pop("attempt", UNSET)

        _cached = d.pop("cached", UNSET)
        cached: CacheHit | Unset
        if isinstance(_cached, Unset):
            cached = UNSET
        else:
            cached = CacheHit.from_dict(_cached)

        data = d.pop("data", UNSET)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        message = d.pop("message", UNSET)

        step = d.pop("step", UNSET)

        worker = d.pop("worker", UNSET)

        journal_entry = cls(
            at=at,
            type_=type_,
            attempt=attempt,
            cached=cached,
            data=data,
            error=error,
            message=message,
            step=step,
            worker=worker,
        )

        return journal_entry

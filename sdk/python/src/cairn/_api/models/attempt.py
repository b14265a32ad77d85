from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.attempt_outcome import AttemptOutcome
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo
    from ..models.usage import Usage


T = TypeVar("T", bound="Attempt")


@_attrs_define
class Attempt:
    """
    Attributes:
        n (int): Attempt number, from 1; every lease is a new attempt.
        claimed_at (datetime.datetime | Unset):
        ended_at (datetime.datetime | Unset):
        error (ErrorInfo | Unset):
        outcome (AttemptOutcome | Unset): How the attempt ended; absent while it runs.
        started_at (datetime.datetime | Unset):
        summary (Any | Unset): What the worker summarised the attempt as (complete or fail); never read by the flow.
        usage (Usage | Unset):
        worker (str | Unset): The worker that held the lease.
    """

    n: int
    claimed_at: datetime.datetime | Unset = UNSET
    ended_at: datetime.datetime | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    outcome: AttemptOutcome | Unset = UNSET
    started_at: datetime.datetime | Unset = UNSET
    summary: Any | Unset = UNSET
    usage: Usage | Unset = UNSET
    worker: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        n = self.n

        claimed_at: str | Unset = UNSET
        if not isinstance(self.claimed_at, Unset):
            claimed_at = self.claimed_at.isoformat()

        ended_at: str | Unset = UNSET
        if not isinstance(self.ended_at, Unset):
            ended_at = self.ended_at.isoformat()

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        outcome: str | Unset = UNSET
        if not isinstance(self.outcome, Unset):
            outcome = self.outcome.value

        started_at: str | Unset = UNSET
        if not isinstance(self.started_at, Unset):
            started_at = self.started_at.isoformat()

        summary = self.summary

        usage: dict[str, Any] | Unset = UNSET
        if not isinstance(self.usage, Unset):
            usage = self.usage.to_dict()

        worker = self.worker

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "n": n,
            }
        )
        if claimed_at is not UNSET:
            field_dict["claimed_at"] = claimed_at
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if error is not UNSET:
            field_dict["error"] = error
        if outcome is not UNSET:
            field_dict["outcome"] = outcome
        if started_at is not UNSET:
            field_dict["started_at"] = started_at
        if summary is not UNSET:
            field_dict["summary"] = summary
        if usage is not UNSET:
            field_dict["usage"] = usage
        if worker is not UNSET:
            field_dict["worker"] = worker

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415
        from ..models.usage import Usage  # noqa: PLC0415

        d = dict(src_dict)
        n = d.pop("n")

        _claimed_at = d.pop("claimed_at", UNSET)
        claimed_at: datetime.datetime | Unset
        if isinstance(_claimed_at, Unset):
            claimed_at = UNSET
        else:
            claimed_at = datetime.datetime.fromisoformat(_claimed_at)

        _ended_at = d.pop("ended_at", UNSET)
        ended_at: datetime.datetime | Unset
        if isinstance(_ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = datetime.datetime.fromisoformat(_ended_at)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        _outcome = d.pop("outcome", UNSET)
        outcome: AttemptOutcome | Unset
        if isinstance(_outcome, Unset):
            outcome = UNSET
        else:
            outcome = AttemptOutcome(_outcome)

        _started_at = d.pop("started_at", UNSET)
        started_at: datetime.datetime | Unset
        if isinstance(_started_at, Unset):
            started_at = UNSET
        else:
            started_at = datetime.datetime.fromisoformat(_started_at)

        summary = d.pop("summary", UNSET)

        _usage = d.pop("usage", UNSET)
        usage: Usage | Unset
        if isinstance(_usage, Unset):
            usage = UNSET
        else:
            usage = Usage.from_dict(_usage)

        worker = d.pop("worker", UNSET)

        attempt = cls(
            n=n,
            claimed_at=claimed_at,
            ended_at=ended_at,
            error=error,
            outcome=outcome,
            started_at=started_at,
            summary=summary,
            usage=usage,
            worker=worker,
        )

        return attempt

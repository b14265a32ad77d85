from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.batch_action import BatchAction
from ..models.batch_state import BatchState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.batch_filter import BatchFilter


T = TypeVar("T", bound="Batch")


@_attrs_define
class Batch:
    """
    Attributes:
        action (BatchAction):
        applied (int): Runs cancelled, rerun, paused or resumed (a run already paused, or already running, counts).
        created_at (datetime.datetime):
        errors (list[str]): The first errors, run by run.
        failed (int): Runs whose action failed for another reason (see errors).
        filter_ (BatchFilter):
        id (str):
        matched (int): Runs that matched the filter.
        pages (int): Pages of runs done.
        scanned (int): Runs looked at.
        skipped (int): Matching runs the action did not apply to (a cancel, pause or resume of a run that ended
            meanwhile, a rerun of a run still running).
        state (BatchState): running until every run of the listing was looked at.
        updated_at (datetime.datetime):
        cursor (str | Unset): Where the batch goes on (opaque).
        ended_at (datetime.datetime | Unset):
        reason (str | Unset):
    """

    action: BatchAction
    applied: int
    created_at: datetime.datetime
    errors: list[str]
    failed: int
    filter_: BatchFilter
    id: str
    matched: int
    pages: int
    scanned: int
    skipped: int
    state: BatchState
    updated_at: datetime.datetime
    cursor: str | Unset = UNSET
    ended_at: datetime.datetime | Unset = UNSET
    reason: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        action = self.action.value

        applied = self.applied

        created_at = self.created_at.isoformat()

        errors = self.errors

        failed = self.failed

        filter_ = self.filter_.to_dict()

        id = self.id

        matched = self.matched

        pages = self.pages

        scanned = self.scanned

        skipped = self.skipped

        state = self.state.value

        updated_at = self.updated_at.isoformat()

        cursor = self.cursor

        ended_at: str | Unset = UNSET
        if not isinstance(self.ended_at, Unset):
            ended_at = self.ended_at.isoformat()

        reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "action": action,
                "applied": applied,
                "created_at": created_at,
                "errors": errors,
                "failed": failed,
                "filter": filter_,
                "id": id,
                "matched": matched,
                "pages": pages,
                "scanned": scanned,
                "skipped": skipped,
                "state": state,
                "updated_at": updated_at,
            }
        )
        if cursor is not UNSET:
            field_dict["cursor"] = cursor
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_filter import BatchFilter  # noqa: PLC0415

        d = dict(src_dict)
        action = BatchAction(d.pop("action"))

        applied = d.pop("applied")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        errors = cast(list[str], d.pop("errors"))

        failed = d.pop("failed")

        filter_ = BatchFilter.from_dict(d.pop("filter"))

        id = d.pop("id")

        matched = d.pop("matched")

        pages = d.pop("pages")

        scanned = d.pop("scanned")

        skipped = d.pop("skipped")

        state = BatchState(d.pop("state"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        cursor = d.pop("cursor", UNSET)

        _ended_at = d.pop("ended_at", UNSET)
        ended_at: datetime.datetime | Unset
        if isinstance(_ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = datetime.datetime.fromisoformat(_ended_at)

        reason = d.pop("reason", UNSET)

        batch = cls(
            action=action,
            applied=applied,
            created_at=created_at,
            errors=errors,
            failed=failed,
            filter_=filter_,
            id=id,
            matched=matched,
            pages=pages,
            scanned=scanned,
            skipped=skipped,
            state=state,
            updated_at=updated_at,
            cursor=cursor,
            ended_at=ended_at,
            reason=reason,
        )

        return batch

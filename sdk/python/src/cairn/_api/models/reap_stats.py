from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ReapStats")


@_attrs_define
class ReapStats:
    """
    Attributes:
        announced (int):
        attempts_timed_out (int):
        errors (int):
        leases_lost (int):
        list_requests (int):
        rearmed (int):
        runs_deleted (int): Ended runs deleted past the retention.
        runs_visited (int):
        schedules_failed (int): Schedule ticks whose run could not be started (see the schedule's last_error).
        schedules_fired (int): Schedule ticks that started their run.
        schedules_skipped (int): Schedule ticks skipped: the previous run still ran (overlap skip).
        timers_due (int):
        timers_fired (int): Sleeps ended, waits timed out, deadlines passed.
    """

    announced: int
    attempts_timed_out: int
    errors: int
    leases_lost: int
    list_requests: int
    rearmed: int
    runs_deleted: int
    runs_visited: int
    schedules_failed: int
    schedules_fired: int
    schedules_skipped: int
    timers_due: int
    timers_fired: int

    def to_dict(self) -> dict[str, Any]:
        announced = self.announced

        attempts_timed_out = self.attempts_timed_out

        errors = self.errors

        leases_lost = self.leases_lost

        list_requests = self.list_requests

        rearmed = self.rearmed

        runs_deleted = self.runs_deleted

        runs_visited = self.runs_visited

        schedules_failed = self.schedules_failed

        schedules_fired = self.schedules_fired

        schedules_skipped = self.schedules_skipped

        timers_due = self.timers_due

        timers_fired = self.timers_fired

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "announced": announced,
                "attempts_timed_out": attempts_timed_out,
                "errors": errors,
                "leases_lost": leases_lost,
                "list_requests": list_requests,
                "rearmed": rearmed,
                "runs_deleted": runs_deleted,
                "runs_visited": runs_visited,
                "schedules_failed": schedules_failed,
                "schedules_fired": schedules_fired,
                "schedules_skipped": schedules_skipped,
                "timers_due": timers_due,
                "timers_fired": timers_fired,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        announced = d.pop("announced")

        attempts_timed_out = d.pop("attempts_timed_out")

        errors = d.pop("errors")

        leases_lost = d.pop("leases_lost")

        list_requests = d.pop("list_requests")

        rearmed = d.pop("rearmed")

        runs_deleted = d.pop("runs_deleted")

        runs_visited = d.pop("runs_visited")

        schedules_failed = d.pop("schedules_failed")

        schedules_fired = d.pop("schedules_fired")

        schedules_skipped = d.pop("schedules_skipped")

        timers_due = d.pop("timers_due")

        timers_fired = d.pop("timers_fired")

        reap_stats = cls(
            announced=announced,
            attempts_timed_out=attempts_timed_out,
            errors=errors,
            leases_lost=leases_lost,
            list_requests=list_requests,
            rearmed=rearmed,
            runs_deleted=runs_deleted,
            runs_visited=runs_visited,
            schedules_failed=schedules_failed,
            schedules_fired=schedules_fired,
            schedules_skipped=schedules_skipped,
            timers_due=timers_due,
            timers_fired=timers_fired,
        )

        return reap_stats

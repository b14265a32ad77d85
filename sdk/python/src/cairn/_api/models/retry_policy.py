from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryPolicy")


@_attrs_define
class RetryPolicy:
    """
    Attributes:
        initial_backoff (str | Unset): Wait before the second attempt, as a Go duration (default 1s).
        max_attempts (int | Unset): Attempts in all, the first included (default 3).
        max_backoff (str | Unset): Longest wait between attempts (default 5m).
        multiplier (float | Unset): Backoff growth per attempt (default 2). Each wait is jittered by ±20%.
        non_retryable (list[str] | Unset): Error classes that fail the step at once.
        retry_after_start (list[str] | Unset): at_most_once only: error classes that may retry an attempt after its
            started was recorded (an explicit opt-in; by default a started at_most_once attempt is never run again).
    """

    initial_backoff: str | Unset = UNSET
    max_attempts: int | Unset = UNSET
    max_backoff: str | Unset = UNSET
    multiplier: float | Unset = UNSET
    non_retryable: list[str] | Unset = UNSET
    retry_after_start: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        initial_backoff = self.initial_backoff

        max_attempts = self.max_attempts

        max_backoff = self.max_backoff

        multiplier = self.multiplier

        non_retryable: list[str] | Unset = UNSET
        if not isinstance(self.non_retryable, Unset):
            non_retryable = self.non_retryable

        retry_after_start: list[str] | Unset = UNSET
        if not isinstance(self.retry_after_start, Unset):
            retry_after_start = self.retry_after_start

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if initial_backoff is not UNSET:
            field_dict["initial_backoff"] = initial_backoff
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts
        if max_backoff is not UNSET:
            field_dict["max_backoff"] = max_backoff
        if multiplier is not UNSET:
            field_dict["multiplier"] = multiplier
        if non_retryable is not UNSET:
            field_dict["non_retryable"] = non_retryable
        if retry_after_start is not UNSET:
            field_dict["retry_after_start"] = retry_after_start

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        initial_backoff = d.pop("initial_backoff", UNSET)

        max_attempts = d.pop("max_attempts", UNSET)

        max_backoff = d.pop("max_backoff", UNSET)

        multiplier = d.pop("multiplier", UNSET)

        non_retryable = cast(list[str], d.pop("non_retryable", UNSET))

        retry_after_start = cast(list[str], d.pop("retry_after_start", UNSET))

        retry_policy = cls(
            initial_backoff=initial_backoff,
            max_attempts=max_attempts,
            max_backoff=max_backoff,
            multiplier=multiplier,
            non_retryable=non_retryable,
            retry_after_start=retry_after_start,
        )

        return retry_policy

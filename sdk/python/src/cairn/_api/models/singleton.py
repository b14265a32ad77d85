from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..models.singleton_mode import SingletonMode
from ..types import UNSET, Unset

T = TypeVar("T", bound="Singleton")


@_attrs_define
class Singleton:
    """
    Attributes:
        mode (SingletonMode): skip: a start while a run holds the key starts nothing and answers that run (existed and
            skipped true); cancel_running: the start cancels that run and starts.
        key (str | Unset): A template over the run's input (as a step's input template), rendered at start: one running
            run per rendered key. Empty: one running run of the workflow.
    """

    mode: SingletonMode
    key: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        mode = self.mode.value

        key = self.key

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "mode": mode,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        mode = SingletonMode(d.pop("mode"))

        key = d.pop("key", UNSET)

        singleton = cls(
            mode=mode,
            key=key,
        )

        return singleton

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budget_counters import BudgetCounters


T = TypeVar("T", bound="Budget")


@_attrs_define
class Budget:
    """
    Attributes:
        cost_usd (float | Unset): Largest cost in US dollars (the run's usage as the price book prices it).
        counters (BudgetCounters | Unset): Largest value of each named usage counter.
        tokens (int | Unset): Largest number of tokens, input and output, over every model.
    """

    cost_usd: float | Unset = UNSET
    counters: BudgetCounters | Unset = UNSET
    tokens: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cost_usd = self.cost_usd

        counters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.counters, Unset):
            counters = self.counters.to_dict()

        tokens = self.tokens

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if counters is not UNSET:
            field_dict["counters"] = counters
        if tokens is not UNSET:
            field_dict["tokens"] = tokens

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.budget_counters import BudgetCounters  # noqa: PLC0415

        d = dict(src_dict)
        cost_usd = d.pop("cost_usd", UNSET)

        _counters = d.pop("counters", UNSET)
        counters: BudgetCounters | Unset
        if isinstance(_counters, Unset):
            counters = UNSET
        else:
            counters = BudgetCounters.from_dict(_counters)

        tokens = d.pop("tokens", UNSET)

        budget = cls(
            cost_usd=cost_usd,
            counters=counters,
            tokens=tokens,
        )

        return budget

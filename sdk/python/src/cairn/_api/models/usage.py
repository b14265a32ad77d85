from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.usage_counters import UsageCounters
    from ..models.usage_models import UsageModels


T = TypeVar("T", bound="Usage")


@_attrs_define
class Usage:
    """
    Attributes:
        cost_usd (float | Unset): Priced by the engine (over every model); ignored on input.
        counters (UsageCounters | Unset): Free counters, summed per step and run.
        input_tokens (int | Unset): All input tokens, over every model.
        model (str | Unset): The model the tokens are of, priced by the engine's price book; "mixed" when models holds
            several.
        models (UsageModels | Unset): Tokens and cost per model, when the usage is of several models (model is then
            "mixed"); each model is priced by the engine. Tokens without a model count in the totals only.
        output_tokens (int | Unset): All output tokens, over every model.
    """

    cost_usd: float | Unset = UNSET
    counters: UsageCounters | Unset = UNSET
    input_tokens: int | Unset = UNSET
    model: str | Unset = UNSET
    models: UsageModels | Unset = UNSET
    output_tokens: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        cost_usd = self.cost_usd

        counters: dict[str, Any] | Unset = UNSET
        if not isinstance(self.counters, Unset):
            counters = self.counters.to_dict()

        input_tokens = self.input_tokens

        model = self.model

        models: dict[str, Any] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models.to_dict()

        output_tokens = self.output_tokens

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if counters is not UNSET:
            field_dict["counters"] = counters
        if input_tokens is not UNSET:
            field_dict["input_tokens"] = input_tokens
        if model is not UNSET:
            field_dict["model"] = model
        if models is not UNSET:
            field_dict["models"] = models
        if output_tokens is not UNSET:
            field_dict["output_tokens"] = output_tokens

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_counters import UsageCounters  # noqa: PLC0415
        from ..models.usage_models import UsageModels  # noqa: PLC0415

        d = dict(src_dict)
        cost_usd = d.pop("cost_usd", UNSET)

        _counters = d.pop("counters", UNSET)
        counters: UsageCounters | Unset
        if isinstance(_counters, Unset):
            counters = UNSET
        else:
            counters = UsageCounters.from_dict(_counters)

        input_tokens = d.pop("input_tokens", UNSET)

        model = d.pop("model", UNSET)

        _models = d.pop("models", UNSET)
        models: UsageModels | Unset
        if isinstance(_models, Unset):
            models = UNSET
        else:
            models = UsageModels.from_dict(_models)

        output_tokens = d.pop("output_tokens", UNSET)

        usage = cls(
            cost_usd=cost_usd,
            counters=counters,
            input_tokens=input_tokens,
            model=model,
            models=models,
            output_tokens=output_tokens,
        )

        return usage

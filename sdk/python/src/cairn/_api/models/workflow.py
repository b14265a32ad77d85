from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budget import Budget
    from ..models.cancel_on import CancelOn
    from ..models.concurrency_limit import ConcurrencyLimit
    from ..models.debounce import Debounce
    from ..models.event_batch import EventBatch
    from ..models.singleton import Singleton
    from ..models.step import Step
    from ..models.trigger import Trigger
    from ..models.workflow_reducers import WorkflowReducers


T = TypeVar("T", bound="Workflow")


@_attrs_define
class Workflow:
    """
    Attributes:
        name (str): Workflow name.
        steps (list[Step]): The steps; order does not matter, after does.
        version (str): Version; several coexist, runs pin theirs.
        batch (EventBatch | Unset):
        budget (Budget | Unset):
        cancel_on (list[CancelOn] | Unset): A running run is cancelled by a published event (POST /events) with one of
            these names whose if matches it: the event's payload against the run's input, for example.
        clear (list[str] | Unset): Encrypted workflows: top-level keys of the run input and state the SDKs leave in the
            clear, so templates, conditions and keys may read inside them.
        concurrency (list[ConcurrencyLimit] | Unset): Limits on the task attempts of all runs of this workflow (every
            version) holding a lease at once: each per rendered key, or, without a key, one global limit for the workflow.
        deadline (str | Unset): Default run deadline, from start (default: none).
        debounce (Debounce | Unset):
        description (str | Unset):
        encrypted (bool | Unset): The SDKs encrypt this workflow's payloads on the client (each top-level value of the
            run input and state, step outputs, event payloads): the server sees them as opaque {"$cairn_encrypted":…}
            values. Its templates may pass an encrypted value whole (${input.k}, ${state.k}, ${steps.a.output}) but not look
            inside one: a definition whose template does is refused.
        on (list[Trigger] | Unset): Triggers: an event published (POST /events) with one of these names, matching its
            if, starts a run of this workflow's newest registered version, with the event's payload as input.
        on_failure (list[Step] | Unset): Compensation steps (a saga): a small DAG of task steps run after the run fails,
            with the failed run's input, state and step outputs in their templates. The run stays failed; its compensation
            status says how they went.
        reducers (WorkflowReducers | Unset): How a state key folds what steps write to it (default replace): append
            (arrays), sum, max, min (numbers), merge (objects, shallow). Concurrent writers of a key (parallel steps, map
            items) then all count, folded in commit order.
        singleton (Singleton | Unset):
    """

    name: str
    steps: list[Step]
    version: str
    batch: EventBatch | Unset = UNSET
    budget: Budget | Unset = UNSET
    cancel_on: list[CancelOn] | Unset = UNSET
    clear: list[str] | Unset = UNSET
    concurrency: list[ConcurrencyLimit] | Unset = UNSET
    deadline: str | Unset = UNSET
    debounce: Debounce | Unset = UNSET
    description: str | Unset = UNSET
    encrypted: bool | Unset = UNSET
    on: list[Trigger] | Unset = UNSET
    on_failure: list[Step] | Unset = UNSET
    reducers: WorkflowReducers | Unset = UNSET
    singleton: Singleton | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        steps = []
        for steps_item_data in self.steps:
            steps_item = steps_item_data.to_dict()
            steps.append(steps_item)

        version = self.version

        batch: dict[str, Any] | Unset = UNSET
        if not isinstance(self.batch, Unset):
            batch = self.batch.to_dict()

        budget: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budget, Unset):
            budget = self.budget.to_dict()

        cancel_on: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.cancel_on, Unset):
            cancel_on = []
            for cancel_on_item_data in self.cancel_on:
                cancel_on_item = cancel_on_item_data.to_dict()
                cancel_on.append(cancel_on_item)

        clear: list[str] | Unset = UNSET
        if not isinstance(self.clear, Unset):
            clear = self.clear

        concurrency: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.concurrency, Unset):
            concurrency = []
            for concurrency_item_data in self.concurrency:
                concurrency_item = concurrency_item_data.to_dict()
                concurrency.append(concurrency_item)

        deadline = self.deadline

        debounce: dict[str, Any] | Unset = UNSET
        if not isinstance(self.debounce, Unset):
            debounce = self.debounce.to_dict()

        description = self.description

        encrypted = self.encrypted

        on: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.on, Unset):
            on = []
            for on_item_data in self.on:
                on_item = on_item_data.to_dict()
                on.append(on_item)

        on_failure: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.on_failure, Unset):
            on_failure = []
            for on_failure_item_data in self.on_failure:
                on_failure_item = on_failure_item_data.to_dict()
                on_failure.append(on_failure_item)

        reducers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.reducers, Unset):
            reducers = self.reducers.to_dict()

        singleton: dict[str, Any] | Unset = UNSET
        if not isinstance(self.singleton, Unset):
            singleton = self.singleton.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "steps": steps,
                "version": version,
            }
        )
        if batch is not UNSET:
            field_dict["batch"] = batch
        if budget is not UNSET:
            field_dict["budget"] = budget
        if cancel_on is not UNSET:
            field_dict["cancel_on"] = cancel_on
        if clear is not UNSET:
            field_dict["clear"] = clear
        if concurrency is not UNSET:
            field_dict["concurrency"] = concurrency
        if deadline is not UNSET:
            field_dict["deadline"] = deadline
        if debounce is not UNSET:
            field_dict["debounce"] = debounce
        if description is not UNSET:
            field_dict["description"] = description
        if encrypted is not UNSET:
            field_dict["encrypted"] = encrypted
        if on is not UNSET:
            field_dict["on"] = on
        if on_failure is not UNSET:
            field_dict["on_failure"] = on_failure
        if reducers is not UNSET:
            field_dict["reducers"] = reducers
        if singleton is not UNSET:
            field_dict["singleton"] = singleton

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.budget import Budget  # noqa: PLC0415
        from ..models.cancel_on import CancelOn  # noqa: PLC0415
        from ..models.concurrency_limit import ConcurrencyLimit  # noqa: PLC0415
        from ..models.debounce import Debounce  # noqa: PLC0415
        from ..models.event_batch import EventBatch  # noqa: PLC0415
        from ..models.singleton import Singleton  # noqa: PLC0415
        from ..models.step import Step  # noqa: PLC0415
        from ..models.trigger import Trigger  # noqa: PLC0415
        from ..models.workflow_reducers import WorkflowReducers  # noqa: PLC0415

        d = dict(src_dict)
        name = d.pop("name")

        steps = []
        _steps = d.pop("steps")
        for steps_item_data in _steps:
            steps_item = Step.from_dict(steps_item_data)

            steps.append(steps_item)

        version = d.pop("version")

        _batch = d.pop("batch", UNSET)
        batch: EventBatch | Unset
        if isinstance(_batch, Unset):
            batch = UNSET
        else:
            batch = EventBatch.from_dict(_batch)

        _budget = d.pop("budget", UNSET)
        budget: Budget | Unset
        if isinstance(_budget, Unset):
            budget = UNSET
        else:
            budget = Budget.from_dict(_budget)

        _cancel_on = d.pop("cancel_on", UNSET)
        cancel_on: list[CancelOn] | Unset = UNSET
        if _cancel_on is not UNSET:
            cancel_on = []
            for cancel_on_item_data in _cancel_on:
                cancel_on_item = CancelOn.from_dict(cancel_on_item_data)

                cancel_on.append(cancel_on_item)

        clear = cast(list[str], d.pop("clear", UNSET))

        _concurrency = d.pop("concurrency", UNSET)
        concurrency: list[ConcurrencyLimit] | Unset = UNSET
        if _concurrency is not UNSET:
            concurrency = []
            for concurrency_item_data in _concurrency:
                concurrency_item = ConcurrencyLimit.from_dict(concurrency_item_data)

                concurrency.append(concurrency_item)

        deadline = d.pop("deadline", UNSET)

        _debounce = d.pop("debounce", UNSET)
        debounce: Debounce | Unset
        if isinstance(_debounce, Unset):
            debounce = UNSET
        else:
            debounce = Debounce.from_dict(_debounce)

        description = d.pop("description", UNSET)

        encrypted = d.pop("encrypted", UNSET)

        _on = d.pop("on", UNSET)
        on: list[Trigger] | Unset = UNSET
        if _on is not UNSET:
            on = []
            for on_item_data in _on:
                on_item = Trigger.from_dict(on_item_data)

                on.append(on_item)

        _on_failure = d.pop("on_failure", UNSET)
        on_failure: list[Step] | Unset = UNSET
        if _on_failure is not UNSET:
            on_failure = []
            for on_failure_item_data in _on_failure:
                on_failure_item = Step.from_dict(on_failure_item_data)

                on_failure.append(on_failure_item)

        _reducers = d.pop("reducers", UNSET)
        reducers: WorkflowReducers | Unset
        if isinstance(_reducers, Unset):
            reducers = UNSET
        else:
            reducers = WorkflowReducers.from_dict(_reducers)

        _singleton = d.pop("singleton", UNSET)
        singleton: Singleton | Unset
        if isinstance(_singleton, Unset):
            singleton = UNSET
        else:
            singleton = Singleton.from_dict(_singleton)

        workflow = cls(
            name=name,
            steps=steps,
            version=version,
            batch=batch,
            budget=budget,
            cancel_on=cancel_on,
            clear=clear,
            concurrency=concurrency,
            deadline=deadline,
            debounce=debounce,
            description=description,
            encrypted=encrypted,
            on=on,
            on_failure=on_failure,
            reducers=reducers,
            singleton=singleton,
        )

        return workflow

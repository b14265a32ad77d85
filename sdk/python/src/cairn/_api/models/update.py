from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.update_status import UpdateStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo


T = TypeVar("T", bound="Update")


@_attrs_define
class Update:
    """
    Attributes:
        accepted_at (datetime.datetime): When the run got it.
        id (str): The update's id.
        name (str): Its name.
        run (str): The run it was sent to.
        status (UpdateStatus):
        answer (Any | Unset): When answered: the output of the step the wait's answer names (the wait's own when unset),
            or what the function replied. A value over the inline limit is a payload reference, as outputs are.
        error (ErrorInfo | Unset):
        step (str | Unset): The step that took it: a wait step, or a function step. Empty while no step has.
    """

    accepted_at: datetime.datetime
    id: str
    name: str
    run: str
    status: UpdateStatus
    answer: Any | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    step: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        accepted_at = self.accepted_at.isoformat()

        id = self.id

        name = self.name

        run = self.run

        status = self.status.value

        answer = self.answer

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        step = self.step

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "accepted_at": accepted_at,
                "id": id,
                "name": name,
                "run": run,
                "status": status,
            }
        )
        if answer is not UNSET:
            field_dict["answer"] = answer
        if error is not UNSET:
            field_dict["error"] = error
        if step is not UNSET:
            field_dict["step"] = step

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415

        d = dict(src_dict)
        accepted_at = datetime.datetime.fromisoformat(d.pop("accepted_at"))

        id = d.pop("id")

        name = d.pop("name")

        run = d.pop("run")

        status = UpdateStatus(d.pop("status"))

        answer = d.pop("answer", UNSET)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        step = d.pop("step", UNSET)

        update = cls(
            accepted_at=accepted_at,
            id=id,
            name=name,
            run=run,
            status=status,
            answer=answer,
            error=error,
            step=step,
        )

        return update

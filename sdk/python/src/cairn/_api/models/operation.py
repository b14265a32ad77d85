from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_info import ErrorInfo


T = TypeVar("T", bound="Operation")


@_attrs_define
class Operation:
    """
    Attributes:
        id (str): The operation's id: <scope>/<name>#<k>, k counting earlier uses of the name in the scope.
        kind (str):
        seq (int): Its position in the history, from 0: a checkpoint's operations continue the history where it ends.
        status (str):
        at (datetime.datetime | Unset): When the engine recorded it (set by the engine).
        error (ErrorInfo | Unset):
        result (Any | Unset): A completed operation's result, any JSON.
        update (str | Unset): A wait's: the id of the update it took (set by the engine). A reply's: the id of the
            update it answers.
        wake_at (datetime.datetime | Unset): A sleep's end.
    """

    id: str
    kind: str
    seq: int
    status: str
    at: datetime.datetime | Unset = UNSET
    error: ErrorInfo | Unset = UNSET
    result: Any | Unset = UNSET
    update: str | Unset = UNSET
    wake_at: datetime.datetime | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        seq = self.seq

        status = self.status

        at: str | Unset = UNSET
        if not isinstance(self.at, Unset):
            at = self.at.isoformat()

        error: dict[str, Any] | Unset = UNSET
        if not isinstance(self.error, Unset):
            error = self.error.to_dict()

        result = self.result

        update = self.update

        wake_at: str | Unset = UNSET
        if not isinstance(self.wake_at, Unset):
            wake_at = self.wake_at.isoformat()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "kind": kind,
                "seq": seq,
                "status": status,
            }
        )
        if at is not UNSET:
            field_dict["at"] = at
        if error is not UNSET:
            field_dict["error"] = error
        if result is not UNSET:
            field_dict["result"] = result
        if update is not UNSET:
            field_dict["update"] = update
        if wake_at is not UNSET:
            field_dict["wake_at"] = wake_at

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_info import ErrorInfo  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        seq = d.pop("seq")

        status = d.pop("status")

        _at = d.pop("at", UNSET)
        at: datetime.datetime | Unset
        if isinstance(_at, Unset):
            at = UNSET
        else:
            at = datetime.datetime.fromisoformat(_at)

        _error = d.pop("error", UNSET)
        error: ErrorInfo | Unset
        if isinstance(_error, Unset):
            error = UNSET
        else:
            error = ErrorInfo.from_dict(_error)

        result = d.pop("result", UNSET)

        update = d.pop("update", UNSET)

        _wake_at = d.pop("wake_at", UNSET)
        wake_at: datetime.datetime | Unset
        if isinstance(_wake_at, Unset):
            wake_at = UNSET
        else:
            wake_at = datetime.datetime.fromisoformat(_wake_at)

        operation = cls(
            id=id,
            kind=kind,
            seq=seq,
            status=status,
            at=at,
            error=error,
            result=result,
            update=update,
            wake_at=wake_at,
        )

        return operation

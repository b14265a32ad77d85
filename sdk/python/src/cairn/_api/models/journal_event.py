from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.journal_entry import JournalEntry


T = TypeVar("T", bound="JournalEvent")


@_attrs_define
class JournalEvent:
    """
    Attributes:
        entry (JournalEntry):
        seq (int): The entry's place in the run's journal, from 1.
    """

    entry: JournalEntry
    seq: int

    def to_dict(self) -> dict[str, Any]:
        entry = self.entry.to_dict()

        seq = self.seq

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "entry": entry,
                "seq": seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.journal_entry import JournalEntry  # noqa: PLC0415

        d = dict(src_dict)
        entry = JournalEntry.from_dict(d.pop("entry"))

        seq = d.pop("seq")

        journal_event = cls(
            entry=entry,
            seq=seq,
        )

        return journal_event

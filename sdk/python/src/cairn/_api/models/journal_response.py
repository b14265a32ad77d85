from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.journal_entry import JournalEntry


T = TypeVar("T", bound="JournalResponse")


@_attrs_define
class JournalResponse:
    """
    Attributes:
        entries (list[JournalEntry]):
    """

    entries: list[JournalEntry]

    def to_dict(self) -> dict[str, Any]:
        entries = []
        for entries_item_data in self.entries:
            entries_item = entries_item_data.to_dict()
            entries.append(entries_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "entries": entries,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.journal_entry import JournalEntry  # noqa: PLC0415

        d = dict(src_dict)
        entries = []
        _entries = d.pop("entries")
        for entries_item_data in _entries:
            entries_item = JournalEntry.from_dict(entries_item_data)

            entries.append(entries_item)

        journal_response = cls(
            entries=entries,
        )

        return journal_response

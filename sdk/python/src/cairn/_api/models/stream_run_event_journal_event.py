from enum import StrEnum


class StreamRunEventJournalEvent(StrEnum):
    JOURNAL = "journal"

    def __str__(self) -> str:
        return str(self.value)

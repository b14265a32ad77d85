from enum import StrEnum


class StreamRunEventEndEvent(StrEnum):
    END = "end"

    def __str__(self) -> str:
        return str(self.value)

from enum import StrEnum


class StreamRunEventStatusEvent(StrEnum):
    STATUS = "status"

    def __str__(self) -> str:
        return str(self.value)

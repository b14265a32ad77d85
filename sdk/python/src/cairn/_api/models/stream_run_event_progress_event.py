from enum import StrEnum


class StreamRunEventProgressEvent(StrEnum):
    PROGRESS = "progress"

    def __str__(self) -> str:
        return str(self.value)

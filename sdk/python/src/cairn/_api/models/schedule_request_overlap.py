from enum import StrEnum


class ScheduleRequestOverlap(StrEnum):
    ALLOW = "allow"
    CANCEL_PREVIOUS = "cancel_previous"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)

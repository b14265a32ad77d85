from enum import StrEnum


class ScheduleOverlap(StrEnum):
    ALLOW = "allow"
    CANCEL_PREVIOUS = "cancel_previous"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)

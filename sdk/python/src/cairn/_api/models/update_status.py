from enum import StrEnum


class UpdateStatus(StrEnum):
    ACCEPTED = "accepted"
    ANSWERED = "answered"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)

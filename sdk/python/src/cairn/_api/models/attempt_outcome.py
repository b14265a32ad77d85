from enum import StrEnum


class AttemptOutcome(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    LOST = "lost"
    SUSPENDED = "suspended"
    TIMED_OUT = "timed_out"

    def __str__(self) -> str:
        return str(self.value)

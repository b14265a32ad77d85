from enum import StrEnum


class StepProgressStatus(StrEnum):
    CANCELLED = "cancelled"
    CHILD_RUNNING = "child_running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    MAPPING = "mapping"
    PENDING = "pending"
    READY = "ready"
    SKIPPED = "skipped"
    SLEEPING = "sleeping"
    WAITING = "waiting"

    def __str__(self) -> str:
        return str(self.value)

from enum import StrEnum


class BatchState(StrEnum):
    DONE = "done"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)

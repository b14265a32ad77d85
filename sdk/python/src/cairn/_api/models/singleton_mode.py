from enum import StrEnum


class SingletonMode(StrEnum):
    CANCEL_RUNNING = "cancel_running"
    SKIP = "skip"

    def __str__(self) -> str:
        return str(self.value)

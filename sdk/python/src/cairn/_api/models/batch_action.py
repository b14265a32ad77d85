from enum import StrEnum


class BatchAction(StrEnum):
    CANCEL = "cancel"
    PAUSE = "pause"
    RERUN = "rerun"
    RESUME = "resume"

    def __str__(self) -> str:
        return str(self.value)

from enum import StrEnum


class BatchRequestAction(StrEnum):
    CANCEL = "cancel"
    RERUN = "rerun"

    def __str__(self) -> str:
        return str(self.value)

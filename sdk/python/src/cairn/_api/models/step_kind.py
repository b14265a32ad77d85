from enum import StrEnum


class StepKind(StrEnum):
    CHILD = "child"
    FUNCTION = "function"
    MAP = "map"
    SLEEP = "sleep"
    TASK = "task"
    WAIT = "wait"

    def __str__(self) -> str:
        return str(self.value)

from enum import StrEnum


class StepViewKind(StrEnum):
    CHILD = "child"
    FUNCTION = "function"
    MAP = "map"
    SLEEP = "sleep"
    TASK = "task"
    WAIT = "wait"

    def __str__(self) -> str:
        return str(self.value)

from enum import StrEnum


class ProblemReason(StrEnum):
    ALREADY_APPLIED = "already_applied"
    FENCED = "fenced"
    NOT_STARTED = "not_started"
    RUN_TERMINAL = "run_terminal"
    TOO_LARGE = "too_large"

    def __str__(self) -> str:
        return str(self.value)

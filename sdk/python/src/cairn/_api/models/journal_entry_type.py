from enum import StrEnum


class JournalEntryType(StrEnum):
    CHILD_STARTED = "child_started"
    COMPENSATION_ENDED = "compensation_ended"
    COMPENSATION_STARTED = "compensation_started"
    EVENT_RECEIVED = "event_received"
    LEASE_LOST = "lease_lost"
    MAP_STARTED = "map_started"
    OPERATION = "operation"
    RUN_CANCELLED = "run_cancelled"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_PAUSED = "run_paused"
    RUN_RESUMED = "run_resumed"
    RUN_STARTED = "run_started"
    RUN_TIMED_OUT = "run_timed_out"
    SLEEP_STARTED = "sleep_started"
    STEP_CLAIMED = "step_claimed"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    STEP_INTERRUPTED = "step_interrupted"
    STEP_LOOPED = "step_looped"
    STEP_READY = "step_ready"
    STEP_REQUEUED = "step_requeued"
    STEP_RESUMED = "step_resumed"
    STEP_RETRY_SCHEDULED = "step_retry_scheduled"
    STEP_SKIPPED = "step_skipped"
    STEP_STARTED = "step_started"
    STEP_SUSPENDED = "step_suspended"
    WAIT_STARTED = "wait_started"

    def __str__(self) -> str:
        return str(self.value)

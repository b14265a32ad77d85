"""Contains all the data models used in inputs/outputs"""

from .advance_clock_request import AdvanceClockRequest
from .attempt import Attempt
from .attempt_outcome import AttemptOutcome
from .backfill_request import BackfillRequest
from .backfill_result import BackfillResult
from .backfill_tick import BackfillTick
from .batch import Batch
from .batch_action import BatchAction
from .batch_filter import BatchFilter
from .batch_filter_status_item import BatchFilterStatusItem
from .batch_request import BatchRequest
from .batch_request_action import BatchRequestAction
from .batch_state import BatchState
from .budget import Budget
from .budget_counters import BudgetCounters
from .build_info import BuildInfo
from .cache_hit import CacheHit
from .cache_invalidation import CacheInvalidation
from .cancel_on import CancelOn
from .cancel_request import CancelRequest
from .checkpoint_request import CheckpointRequest
from .checkpointed import Checkpointed
from .checkpointed_run_status import CheckpointedRunStatus
from .claim_next import ClaimNext
from .claim_request import ClaimRequest
from .claim_response import ClaimResponse
from .clock_response import ClockResponse
from .compensation import Compensation
from .compensation_status import CompensationStatus
from .complete_request import CompleteRequest
from .complete_request_attributes import CompleteRequestAttributes
from .complete_request_state_patch import CompleteRequestStatePatch
from .concurrency_limit import ConcurrencyLimit
from .continue_as_new import ContinueAsNew
from .debounce import Debounce
from .ended import Ended
from .ended_run_status import EndedRunStatus
from .error_detail import ErrorDetail
from .error_info import ErrorInfo
from .event_batch import EventBatch
from .event_ref import EventRef
from .event_request import EventRequest
from .event_result import EventResult
from .fail_request import FailRequest
from .fail_request_state_patch import FailRequestStatePatch
from .health_response import HealthResponse
from .heartbeat_many_request import HeartbeatManyRequest
from .heartbeat_many_response import HeartbeatManyResponse
from .heartbeat_result import HeartbeatResult
from .heartbeat_result_reason import HeartbeatResultReason
from .holder import Holder
from .input_view import InputView
from .interrupt_request import InterruptRequest
from .interrupt_request_state_patch import InterruptRequestStatePatch
from .invocation import Invocation
from .journal_entry import JournalEntry
from .journal_entry_type import JournalEntryType
from .journal_event import JournalEvent
from .journal_response import JournalResponse
from .lease import Lease
from .lease_delivery import LeaseDelivery
from .lease_state import LeaseState
from .lease_status import LeaseStatus
from .lease_steps import LeaseSteps
from .list_runs_status import ListRunsStatus
from .list_workers_response import ListWorkersResponse
from .list_workflows_response import ListWorkflowsResponse
from .map_progress import MapProgress
from .model_usage import ModelUsage
from .operation import Operation
from .problem import Problem
from .problem_reason import ProblemReason
from .progress_event import ProgressEvent
from .progress_request import ProgressRequest
from .publish_request import PublishRequest
from .publish_result import PublishResult
from .rate_limit import RateLimit
from .ready_response import ReadyResponse
from .reap_response import ReapResponse
from .reap_stats import ReapStats
from .register_request import RegisterRequest
from .register_request_labels import RegisterRequestLabels
from .register_response import RegisterResponse
from .rerun_request import RerunRequest
from .resume_step_request import ResumeStepRequest
from .retry_policy import RetryPolicy
from .route import Route
from .run import Run
from .run_attributes import RunAttributes
from .run_page import RunPage
from .run_progress import RunProgress
from .run_progress_status import RunProgressStatus
from .run_state import RunState
from .run_status import RunStatus
from .run_summary import RunSummary
from .run_summary_attributes import RunSummaryAttributes
from .run_summary_status import RunSummaryStatus
from .schedule import Schedule
from .schedule_overlap import ScheduleOverlap
from .schedule_page import SchedulePage
from .schedule_request import ScheduleRequest
from .schedule_request_overlap import ScheduleRequestOverlap
from .singleton import Singleton
from .singleton_mode import SingletonMode
from .start_request import StartRequest
from .start_request_attributes import StartRequestAttributes
from .start_request_state import StartRequestState
from .start_result import StartResult
from .step import Step
from .step_cache import StepCache
from .step_delivery import StepDelivery
from .step_kind import StepKind
from .step_progress import StepProgress
from .step_progress_kind import StepProgressKind
from .step_progress_status import StepProgressStatus
from .step_requires_labels import StepRequiresLabels
from .step_view import StepView
from .step_view_kind import StepViewKind
from .step_view_status import StepViewStatus
from .store_entry import StoreEntry
from .store_key_info import StoreKeyInfo
from .store_page import StorePage
from .store_put_request import StorePutRequest
from .stream_run_event_end import StreamRunEventEnd
from .stream_run_event_end_event import StreamRunEventEndEvent
from .stream_run_event_journal import StreamRunEventJournal
from .stream_run_event_journal_event import StreamRunEventJournalEvent
from .stream_run_event_progress import StreamRunEventProgress
from .stream_run_event_progress_event import StreamRunEventProgressEvent
from .stream_run_event_status import StreamRunEventStatus
from .stream_run_event_status_event import StreamRunEventStatusEvent
from .suspension import Suspension
from .trigger import Trigger
from .triggered_run import TriggeredRun
from .update import Update
from .update_request import UpdateRequest
from .update_status import UpdateStatus
from .usage import Usage
from .usage_counters import UsageCounters
from .usage_models import UsageModels
from .worker_info import WorkerInfo
from .worker_info_labels import WorkerInfoLabels
from .workflow import Workflow
from .workflow_reducers import WorkflowReducers
from .workflow_summary import WorkflowSummary

__all__ = (
    "AdvanceClockRequest",
    "Attempt",
    "AttemptOutcome",
    "BackfillRequest",
    "BackfillResult",
    "BackfillTick",
    "Batch",
    "BatchAction",
    "BatchFilter",
    "BatchFilterStatusItem",
    "BatchRequest",
    "BatchRequestAction",
    "BatchState",
    "Budget",
    "BudgetCounters",
    "BuildInfo",
    "CacheHit",
    "CacheInvalidation",
    "CancelOn",
    "CancelRequest",
    "Checkpointed",
    "CheckpointedRunStatus",
    "CheckpointRequest",
    "ClaimNext",
    "ClaimRequest",
    "ClaimResponse",
    "ClockResponse",
    "Compensation",
    "CompensationStatus",
    "CompleteRequest",
    "CompleteRequestAttributes",
    "CompleteRequestStatePatch",
    "ConcurrencyLimit",
    "ContinueAsNew",
    "Debounce",
    "Ended",
    "EndedRunStatus",
    "ErrorDetail",
    "ErrorInfo",
    "EventBatch",
    "EventRef",
    "EventRequest",
    "EventResult",
    "FailRequest",
    "FailRequestStatePatch",
    "HealthResponse",
    "HeartbeatManyRequest",
    "HeartbeatManyResponse",
    "HeartbeatResult",
    "HeartbeatResultReason",
    "Holder",
    "InputView",
    "InterruptRequest",
    "InterruptRequestStatePatch",
    "Invocation",
    "JournalEntry",
    "JournalEntryType",
    "JournalEvent",
    "JournalResponse",
    "Lease",
    "LeaseDelivery",
    "LeaseState",
    "LeaseStatus",
    "LeaseSteps",
    "ListRunsStatus",
    "ListWorkersResponse",
    "ListWorkflowsResponse",
    "MapProgress",
    "ModelUsage",
    "Operation",
    "Problem",
    "ProblemReason",
    "ProgressEvent",
    "ProgressRequest",
    "PublishRequest",
    "PublishResult",
    "RateLimit",
    "ReadyResponse",
    "ReapResponse",
    "ReapStats",
    "RegisterRequest",
    "RegisterRequestLabels",
    "RegisterResponse",
    "RerunRequest",
    "ResumeStepRequest",
    "RetryPolicy",
    "Route",
    "Run",
    "RunAttributes",
    "RunPage",
    "RunProgress",
    "RunProgressStatus",
    "RunState",
    "RunStatus",
    "RunSummary",
    "RunSummaryAttributes",
    "RunSummaryStatus",
    "Schedule",
    "ScheduleOverlap",
    "SchedulePage",
    "ScheduleRequest",
    "ScheduleRequestOverlap",
    "Singleton",
    "SingletonMode",
    "StartRequest",
    "StartRequestAttributes",
    "StartRequestState",
    "StartResult",
    "Step",
    "StepCache",
    "StepDelivery",
    "StepKind",
    "StepProgress",
    "StepProgressKind",
    "StepProgressStatus",
    "StepRequiresLabels",
    "StepView",
    "StepViewKind",
    "StepViewStatus",
    "StoreEntry",
    "StoreKeyInfo",
    "StorePage",
    "StorePutRequest",
    "StreamRunEventEnd",
    "StreamRunEventEndEvent",
    "StreamRunEventJournal",
    "StreamRunEventJournalEvent",
    "StreamRunEventProgress",
    "StreamRunEventProgressEvent",
    "StreamRunEventStatus",
    "StreamRunEventStatusEvent",
    "Suspension",
    "Trigger",
    "TriggeredRun",
    "Update",
    "UpdateRequest",
    "UpdateStatus",
    "Usage",
    "UsageCounters",
    "UsageModels",
    "WorkerInfo",
    "WorkerInfoLabels",
    "Workflow",
    "WorkflowReducers",
    "WorkflowSummary",
)

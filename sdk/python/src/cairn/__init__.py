"""cairn's Python SDK: a client for runs and a worker for step bodies, over
the client generated from the committed OpenAPI document (cairn._api)."""

__version__ = "0.1.0"

from .client import DEFAULT_SERVER, AsyncClient, Client, StartedRun
from .codec import CLASS_CODEC, CodecError, Keyring
from .errors import (
    APIError,
    AttemptTimeout,
    CairnError,
    Cancelled,
    FatalError,
    Interrupt,
    LeaseLost,
    RetryableError,
    RunEnded,
    RunFailedError,
    Shutdown,
    StepError,
    StepFailure,
    TransportError,
    failure,
    fatal,
    is_conflict,
    is_not_found,
    reason_of,
    retryable,
)
from .function import ContinueAsNew, Durable, FunctionBody, Received, Suspended, SyncDurable, SyncFunctionBody, function
from .here import run_here, run_here_async
from .store import AsyncStore, Entry, Store
from .stream import StreamEvent
from .usage import Usage, UsageSpanProcessor
from .worker import StepContext, StepInfo, Worker
from .workflow import Cache, Concurrency, RateLimit, RetryPolicy, Workflow, workflow

__all__ = [
    "CLASS_CODEC",
    "DEFAULT_SERVER",
    "APIError",
    "AsyncClient",
    "AsyncStore",
    "AttemptTimeout",
    "Cache",
    "CairnError",
    "Cancelled",
    "Client",
    "CodecError",
    "Concurrency",
    "ContinueAsNew",
    "Durable",
    "Entry",
    "FatalError",
    "FunctionBody",
    "Interrupt",
    "Keyring",
    "LeaseLost",
    "RateLimit",
    "Received",
    "RetryPolicy",
    "RetryableError",
    "RunEnded",
    "RunFailedError",
    "Shutdown",
    "StartedRun",
    "StepContext",
    "StepError",
    "StepFailure",
    "StepInfo",
    "Store",
    "StreamEvent",
    "Suspended",
    "SyncDurable",
    "SyncFunctionBody",
    "TransportError",
    "Usage",
    "UsageSpanProcessor",
    "Worker",
    "Workflow",
    "failure",
    "fatal",
    "function",
    "is_conflict",
    "is_not_found",
    "reason_of",
    "retryable",
    "run_here",
    "run_here_async",
    "workflow",
]

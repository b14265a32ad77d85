"""Usage: model tokens and counters of a step attempt, recorded explicitly
(StepContext.set_usage) or summed from the OpenTelemetry spans the body opens
under the step's span, as the Go SDK does. Span attributes read: the
generative-AI semantic conventions' gen_ai.usage.input_tokens and
output_tokens (and the deprecated prompt/completion names),
gen_ai.response.model or gen_ai.request.model, and cairn.usage.<name> integer
counters."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider

ATTR_INPUT_TOKENS = "gen_ai.usage.input_tokens"
ATTR_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ATTR_REQUEST_MODEL = "gen_ai.request.model"
ATTR_RESPONSE_MODEL = "gen_ai.response.model"
ATTR_COUNTER_PREFIX = "cairn.usage."
MIXED_MODELS = "mixed"


@dataclass
class Usage:
    """What an attempt consumed: tokens (of one model, or several in models)
    and free counters. The engine prices it from its price book."""

    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    #: Tokens per model, (input, output), when the usage is of several models.
    models: dict[str, tuple[int, int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    def by_model(self) -> dict[str, tuple[int, int]]:
        if self.models:
            return dict(self.models)
        if self.model and self.model != MIXED_MODELS:
            return {self.model: (self.input_tokens, self.output_tokens)}
        return {}

    def add(self, o: Usage) -> None:
        models = self.by_model()
        for m, (i, out) in o.by_model().items():
            ci, co = models.get(m, (0, 0))
            models[m] = (ci + i, co + out)
        self.input_tokens += o.input_tokens
        self.output_tokens += o.output_tokens
        for k, v in o.counters.items():
            self.counters[k] = self.counters.get(k, 0) + v
        if not models:
            self.model, self.models = "", {}
        elif len(models) == 1 and next(iter(models.values())) == (self.input_tokens, self.output_tokens):
            self.model, self.models = next(iter(models)), {}
        else:
            self.model, self.models = MIXED_MODELS, models

    def copy(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, self.model, dict(self.models), dict(self.counters))

    def wire(self) -> dict[str, Any] | None:
        """The API's Usage, or None when there is nothing to say."""
        u: dict[str, Any] = {}
        if self.input_tokens:
            u["input_tokens"] = self.input_tokens
        if self.output_tokens:
            u["output_tokens"] = self.output_tokens
        if self.model:
            u["model"] = self.model
        if self.models:
            u["models"] = {m: {"input_tokens": i, "output_tokens": o} for m, (i, o) in self.models.items()}
        if self.counters:
            u["counters"] = dict(self.counters)
        return u or None


class _Acc:
    """The usage summed from one attempt's spans."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.usage = Usage()

    def add(self, u: Usage) -> None:
        with self.lock:
            self.usage.add(u)

    def total(self) -> Usage:
        with self.lock:
            return self.usage.copy()


def _int(v: Any) -> int:
    if isinstance(v, bool):
        return 0
    if isinstance(v, int | float):
        return int(v)
    return 0


def usage_of(attrs: Any) -> Usage | None:
    """The usage span attributes record, or None."""
    if not attrs:
        return None
    u = Usage()
    found = False
    req_model = ""
    for k, v in attrs.items():
        if k in (ATTR_INPUT_TOKENS, "gen_ai.usage.prompt_tokens"):
            u.input_tokens += _int(v)
            found = True
        elif k in (ATTR_OUTPUT_TOKENS, "gen_ai.usage.completion_tokens"):
            u.output_tokens += _int(v)
            found = True
        elif k == ATTR_RESPONSE_MODEL:
            u.model = str(v)
        elif k == ATTR_REQUEST_MODEL:
            req_model = str(v)
        elif k.startswith(ATTR_COUNTER_PREFIX) and len(k) > len(ATTR_COUNTER_PREFIX):
            name = k[len(ATTR_COUNTER_PREFIX) :]
            u.counters[name] = u.counters.get(name, 0) + _int(v)
            found = True
    if not u.model:
        u.model = req_model
    return u if found else None


class UsageSpanProcessor(SpanProcessor):
    """Sums the token usage recorded on spans opened under a step's span into
    that step's usage. A Worker adds the one instance (USAGE_PROCESSOR) by
    itself to an SDK TracerProvider it is given or finds installed globally;
    add it yourself to a provider the worker cannot see. Adding it more than
    once counts nothing twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: dict[int, _Acc] = {}

    def track(self, span_id: int, acc: _Acc) -> None:
        with self._lock:
            self._spans[span_id] = acc

    def untrack(self, span_id: int) -> None:
        with self._lock:
            self._spans.pop(span_id, None)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = trace.get_current_span(parent_context).get_span_context()
        if not parent.is_valid:
            return
        with self._lock:
            acc = self._spans.get(parent.span_id)
            if acc is not None and span.context is not None:
                self._spans[span.context.span_id] = acc

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None:
            return
        with self._lock:
            acc = self._spans.pop(span.context.span_id, None)
        if acc is None:
            return
        u = usage_of(span.attributes)
        if u is not None:
            acc.add(u)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


USAGE_PROCESSOR = UsageSpanProcessor()
_installed: weakref.WeakSet[SDKTracerProvider] = weakref.WeakSet()
_install_lock = threading.Lock()


def install(tp: Any) -> None:
    """Adds the usage processor to tp when it is an SDK tracer provider (once)."""
    if not isinstance(tp, SDKTracerProvider):
        return
    with _install_lock:
        if tp in _installed:
            return
        tp.add_span_processor(USAGE_PROCESSOR)
        _installed.add(tp)

package sdk

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes the usage processor reads. They follow the OpenTelemetry
// semantic conventions for generative AI; the deprecated prompt/completion
// names are read too.
const (
	AttrInputTokens   = "gen_ai.usage.input_tokens"
	AttrOutputTokens  = "gen_ai.usage.output_tokens"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	// AttrCounterPrefix: an integer attribute named cairn.usage.<name> adds
	// to the step's free counter <name>.
	AttrCounterPrefix = "cairn.usage."
)

// usageAcc sums the usage of one attempt's spans.
type usageAcc struct {
	mu sync.Mutex
	u  Usage
}

func (a *usageAcc) add(u Usage) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.u.Add(u)
	a.mu.Unlock()
}

func (a *usageAcc) total() Usage {
	if a == nil {
		return Usage{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.u
	if len(u.Models) > 0 {
		u.Models = u.ByModel() // a copy
	}
	if u.Counters != nil {
		c := make(map[string]int64, len(u.Counters))
		for k, v := range u.Counters {
			c[k] = v
		}
		u.Counters = c
	}
	return u
}

// usageProcessor is an OpenTelemetry span processor that sums the token
// usage recorded on spans opened under a step into that step's usage. A
// span belongs to a step when its parent context derives from the
// StepContext, or when its parent span belongs to one.
type usageProcessor struct {
	spans sync.Map // trace.SpanID → *usageAcc
}

var theUsageProcessor = &usageProcessor{}

// UsageSpanProcessor returns the span processor that sums gen_ai token
// usage from the spans a body opens into the step's usage. A Worker adds
// it by itself to an SDK TracerProvider (go.opentelemetry.io/otel/sdk/trace)
// given with WithTracerProvider or installed globally; register it
// yourself on a provider the worker cannot see through:
//
//	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdk.UsageSpanProcessor()), …)
//
// Registering it more than once counts nothing twice.
func UsageSpanProcessor() sdktrace.SpanProcessor { return theUsageProcessor }

func (p *usageProcessor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	var acc *usageAcc
	if sc, ok := StepFromContext(parent); ok {
		acc = sc.(*stepCtx).usage
	} else if ps := trace.SpanContextFromContext(parent); ps.IsValid() {
		if v, ok := p.spans.Load(ps.SpanID()); ok {
			acc = v.(*usageAcc)
		}
	}
	if acc != nil {
		p.spans.Store(s.SpanContext().SpanID(), acc)
	}
}

func (p *usageProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	v, ok := p.spans.LoadAndDelete(s.SpanContext().SpanID())
	if !ok {
		return
	}
	if u, ok := usageOf(s.Attributes()); ok {
		v.(*usageAcc).add(u)
	}
}

func (p *usageProcessor) Shutdown(context.Context) error   { return nil }
func (p *usageProcessor) ForceFlush(context.Context) error { return nil }

// usageOf reads usage attributes.
func usageOf(attrs []attribute.KeyValue) (Usage, bool) {
	var u Usage
	found := false
	var reqModel string
	for _, kv := range attrs {
		k := string(kv.Key)
		switch k {
		case AttrInputTokens, "gen_ai.usage.prompt_tokens":
			u.InputTokens += intOf(kv.Value)
			found = true
		case AttrOutputTokens, "gen_ai.usage.completion_tokens":
			u.OutputTokens += intOf(kv.Value)
			found = true
		case AttrResponseModel:
			u.Model = kv.Value.AsString()
		case AttrRequestModel:
			reqModel = kv.Value.AsString()
		default:
			if name, ok := strings.CutPrefix(k, AttrCounterPrefix); ok && name != "" {
				if u.Counters == nil {
					u.Counters = map[string]int64{}
				}
				u.Counters[name] += intOf(kv.Value)
				found = true
			}
		}
	}
	if u.Model == "" {
		u.Model = reqModel
	}
	if !found {
		return Usage{}, false
	}
	return u, true
}

func intOf(v attribute.Value) int64 {
	switch v.Type() {
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		return int64(v.AsFloat64())
	}
	return 0
}

// processorRegistry tracks the SDK tracer providers the usage processor
// was added to by workers, so the last worker to stop removes it.
var processorRegistry = struct {
	sync.Mutex
	refs map[*sdktrace.TracerProvider]int
}{refs: map[*sdktrace.TracerProvider]int{}}

// installUsageProcessor adds the usage processor to tp when it is an SDK
// tracer provider, and returns the function that removes it again.
func installUsageProcessor(tp trace.TracerProvider) func() {
	sdkTP, ok := tp.(*sdktrace.TracerProvider)
	if !ok {
		return func() {}
	}
	processorRegistry.Lock()
	defer processorRegistry.Unlock()
	if processorRegistry.refs[sdkTP] == 0 {
		sdkTP.RegisterSpanProcessor(theUsageProcessor)
	}
	processorRegistry.refs[sdkTP]++
	var once sync.Once
	return func() {
		once.Do(func() {
			processorRegistry.Lock()
			defer processorRegistry.Unlock()
			processorRegistry.refs[sdkTP]--
			if processorRegistry.refs[sdkTP] == 0 {
				delete(processorRegistry.refs, sdkTP)
				sdkTP.UnregisterSpanProcessor(theUsageProcessor)
			}
		})
	}
}

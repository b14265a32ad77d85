package config

// Telemetry is what the process exports besides logs. Traces are
// configured by the standard OTEL_* variables, which package telemetry
// reads itself; this section holds cairn's own switches.
type Telemetry struct {
	// Metrics serves the engine's metrics for Prometheus at /metrics on
	// the API's listener (CAIRN_METRICS; cairn serve/dev --metrics).
	Metrics bool
}

func (t *Telemetry) parse(r *reader) {
	t.Metrics = r.boolean(EnvMetrics)
}

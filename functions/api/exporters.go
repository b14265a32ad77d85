//go:build !lambda.norpc

package main

// Off Lambda (Cloud Run, a host, a laptop) the function exports what cairn
// serve does: OTLP traces over gRPC or HTTP, Prometheus metrics.
import _ "github.com/cairn-dev/cairn/telemetry/otelsetup/exporters"

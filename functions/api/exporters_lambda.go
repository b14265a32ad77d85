//go:build lambda.norpc

package main

// The Lambda bootstrap (make lambda builds with lambda.norpc) exports OTLP
// traces over HTTP only, with an exporter that links no gRPC: Lambda
// cannot be scraped for /metrics, and gRPC and the Prometheus client
// would double the bootstrap and its cold start (docs/DECISIONS.md).
import _ "github.com/cairn-dev/cairn/telemetry/otelsetup/otlphttp"

// Package config reads the configuration of cairn's functions — the API
// function and the reaper — from environment variables, and only from
// them: the same binary runs on AWS Lambda, Google Cloud Run and a laptop,
// and each of those hands configuration to a process as its environment.
// The command line (cairn serve, dev, reaper) puts its flags on top of the
// same variables.
//
// Everything is validated at start, and every problem is reported at once:
// a deploy with three mistakes fails with one error naming all three, each
// with the variable it concerns and what a valid value looks like.
//
// This package only parses: a Config is plain data, one section per
// concern (store.go, bus.go, auth.go, engine.go, reaper.go, server.go).
// Opening the bucket and the bus, building the engine and the logger is
// internal/app's job.
//
//	CAIRN_BLOB              bucket URL (required): s3://bucket?region=…, gs://bucket, file:///dir, mem://
//	CAIRN_NOTIFY            notification bus URL (optional): awssqs://…, gcppubsub://…, nats://…, mem://…
//	CAIRN_KEYS              API keys, id:scope+scope:sha256hex,… (required unless CAIRN_DEV=true)
//	CAIRN_DEV               true: accept requests without a key (laptops only; refused on Lambda and Cloud Run)
//	CAIRN_PRICES            price book, JSON: {"model":{"input_per_million":3,"output_per_million":15}}
//	CAIRN_MAX_REQUEST_TIME  the platform's request limit [30s]; a claim holds at most 4/5 of it
//	CAIRN_LEASE_TTL         lease lifetime without a heartbeat [30s]
//	CAIRN_HEARTBEAT         heartbeat period told to workers [CAIRN_LEASE_TTL/3]
//	CAIRN_CLAIM_HOLD        the longest a claim is held open while nothing is ready [4/5 of CAIRN_MAX_REQUEST_TIME; 2s on Lambda]
//	CAIRN_CLAIM_PAUSE       how long a worker is told to wait after an empty claim [0; 20s on Lambda]
//	CAIRN_FALLBACK_INTERVAL how often a waiting claim looks in the bucket for work whose hint was lost [10s]
//	CAIRN_SHED_ABOVE        share of refused writes above which new runs are shed (0.01–0.99, or off) [0.1]
//	CAIRN_KEY_LAYOUT        flat or sharded: sharded spreads runs, leases, timers and audit over 16 key prefixes (docs/SCALE.md) [flat]
//	PORT                    port of the HTTP server outside Lambda [8080]
//	CAIRN_HOST              address the HTTP server binds [127.0.0.1; the container image sets 0.0.0.0]
//	CAIRN_LOG_LEVEL         debug, info, warn, error [info]
//	CAIRN_LOG_FORMAT        json or text [json on Lambda and Cloud Run, text elsewhere]
//
// The reaper, when it is called over HTTP (Cloud Scheduler), also reads:
//
//	CAIRN_OIDC_AUDIENCE     accept OIDC ID tokens minted for this audience (the reaper's URL)
//	CAIRN_OIDC_EMAILS       … and only for these service accounts (comma-separated; required with the audience)
//	CAIRN_OIDC_ISSUER       [https://accounts.google.com]
//	CAIRN_OIDC_JWKS_URL     [https://www.googleapis.com/oauth2/v3/certs]
package config

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// The environment variables read.
const (
	EnvBlob             = "CAIRN_BLOB"
	EnvNotify           = "CAIRN_NOTIFY"
	EnvKeys             = "CAIRN_KEYS"
	EnvDev              = "CAIRN_DEV"
	EnvPrices           = "CAIRN_PRICES"
	EnvMaxRequestTime   = "CAIRN_MAX_REQUEST_TIME"
	EnvLeaseTTL         = "CAIRN_LEASE_TTL"
	EnvHeartbeat        = "CAIRN_HEARTBEAT"
	EnvFallbackInterval = "CAIRN_FALLBACK_INTERVAL"
	EnvClaimHold        = "CAIRN_CLAIM_HOLD"
	EnvClaimPause       = "CAIRN_CLAIM_PAUSE"
	EnvRetention        = "CAIRN_RETENTION"
	EnvKeyLayout        = "CAIRN_KEY_LAYOUT"
	EnvShedAbove        = "CAIRN_SHED_ABOVE"
	// Payloads by reference (engine/payloads.go): sizes in bytes.
	EnvPayloadInlineMax = "CAIRN_PAYLOAD_INLINE_MAX"
	EnvMaxPayloadBytes  = "CAIRN_MAX_PAYLOAD_BYTES"
	EnvPort             = "PORT"
	EnvHost             = "CAIRN_HOST"
	EnvLogLevel         = "CAIRN_LOG_LEVEL"
	EnvLogFormat        = "CAIRN_LOG_FORMAT"
	EnvMetrics          = "CAIRN_METRICS"
	EnvOIDCAudience     = "CAIRN_OIDC_AUDIENCE"
	EnvOIDCEmails       = "CAIRN_OIDC_EMAILS"
	EnvOIDCIssuer       = "CAIRN_OIDC_ISSUER"
	EnvOIDCJWKSURL      = "CAIRN_OIDC_JWKS_URL"

	// Set by the platforms, read to know where we run.
	EnvLambdaRuntimeAPI = "AWS_LAMBDA_RUNTIME_API"
	EnvCloudRunService  = "K_SERVICE"
)

// Known lists every CAIRN_ variable this package reads.
var Known = []string{
	EnvBlob, EnvNotify, EnvKeys, EnvDev, EnvPrices, EnvMaxRequestTime, EnvLeaseTTL, EnvHeartbeat,
	EnvFallbackInterval, EnvRetention, EnvHost, EnvLogLevel, EnvLogFormat, EnvMetrics,
	EnvOIDCAudience, EnvOIDCEmails, EnvOIDCIssuer, EnvOIDCJWKSURL, EnvKeyLayout,
	EnvOIDCAudience, EnvOIDCEmails, EnvOIDCIssuer, EnvOIDCJWKSURL,
	EnvPayloadInlineMax, EnvMaxPayloadBytes, EnvClaimHold, EnvClaimPause, EnvShedAbove,
}

// otherCairnVars are CAIRN_ variables other parts of cairn read (the SDK,
// the test harness); seeing them is no reason to warn.
var otherCairnVars = []string{"CAIRN_SERVER", "CAIRN_KEY", "CAIRN_MINIO_IMAGE", "CAIRN_AZURITE_BIN", "CAIRN_CACHE_DIR", "CAIRN_ADDR"}

// Role is what the process is; it decides which variables are required.
type Role string

const (
	// API is the API function: keys (or dev mode) are required.
	API Role = "api"
	// Reaper is the reaper invoked by the platform's scheduler (EventBridge
	// Scheduler invoking a Lambda, or a local loop): it serves no request,
	// so it needs no key.
	Reaper Role = "reaper"
	// ReaperHTTP is the reaper behind an HTTP endpoint (Cloud Run, called
	// by Cloud Scheduler): it needs an admin-scoped key, OIDC, or dev mode.
	ReaperHTTP Role = "reaper-http"
)

// Subscribes reports whether a process of this role receives hints from
// the bus. Only the API claims work; the reaper only announces it.
// Deployment templates grant queue permissions accordingly (receive and
// delete for the API, send only for the reaper).
func Subscribes(r Role) bool { return r == API }

// Config is a validated configuration: one section per concern. The
// sections are embedded, so their fields read as c.Blob, c.LeaseTTL,
// c.Host….
type Config struct {
	Role Role

	Platform
	Store
	Bus
	Auth
	Engine
	Server
	Log
	Telemetry

	// OIDC is the reaper's section: who may call it over HTTP.
	OIDC OIDC

	// Warnings are things worth saying at start that are not errors: an
	// unknown CAIRN_ variable (a typo?), a variable this role ignores.
	Warnings []string
}

// Platform tells where the process runs.
type Platform struct {
	OnLambda, OnCloudRun bool
}

func (p *Platform) parse(r *reader) {
	_, p.OnLambda = r.lookup(EnvLambdaRuntimeAPI)
	_, p.OnCloudRun = r.lookup(EnvCloudRunService)
}

// OnCloud reports whether the process runs on a platform of the clouds.
func (p Platform) OnCloud() bool { return p.OnLambda || p.OnCloudRun }

// Problem is one invalid or missing variable.
type Problem struct {
	Var     string
	Message string
}

func (p Problem) String() string { return p.Var + ": " + p.Message }

// Error lists every problem found in a configuration.
type Error struct {
	Role     Role
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	fmt.Fprintf(&b, "cairn %s: invalid configuration (%d problem%s):", e.Role, n, map[bool]string{true: "", false: "s"}[n == 1])
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Load reads the configuration for role from the process environment.
func Load(role Role) (*Config, error) {
	return FromEnv(role, os.Environ())
}

// FromEnv reads the configuration for role from environ ("KEY=value"
// entries, as os.Environ returns them; of a key set twice the last
// entry wins). The error, if any, is an *Error naming every problem.
func FromEnv(role Role, environ []string) (*Config, error) {
	switch role {
	case API, Reaper, ReaperHTTP:
	default:
		return nil, fmt.Errorf("config: unknown role %q", role)
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	r := &reader{env: env}
	c := &Config{Role: role}
	// The order of the sections is the order of the problems reported.
	c.Platform.parse(r)
	c.Store.parse(r)
	c.Bus.parse(r)
	c.Auth.parse(r, c.Platform)
	c.Engine.parse(r, c.Platform)
	c.Server.parse(r)
	c.Log.parse(r, c.Platform)
	c.Telemetry.parse(r)
	c.OIDC.parse(r, role)
	c.Auth.require(r, role, c.OIDC)

	// Typos.
	for k := range env {
		if strings.HasPrefix(k, "CAIRN_") && !slices.Contains(Known, k) && !slices.Contains(otherCairnVars, k) {
			r.warn(fmt.Sprintf("unknown variable %s ignored (known: %s)", k, strings.Join(Known, ", ")))
		}
	}
	if len(r.problems) > 0 {
		return nil, &Error{Role: role, Problems: r.problems}
	}
	c.Warnings = r.warnings
	slices.Sort(c.Warnings)
	return c, nil
}

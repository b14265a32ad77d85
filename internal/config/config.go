// Package config reads the configuration of cairn's functions — the API
// function and the reaper — from environment variables, and only from
// them: the same binary runs on AWS Lambda, Google Cloud Run and a laptop,
// and each of those hands configuration to a process as its environment.
//
// Everything is validated at start, and every problem is reported at once:
// a deploy with three mistakes fails with one error naming all three, each
// with the variable it concerns and what a valid value looks like.
//
//	CAIRN_BLOB              bucket URL (required): s3://bucket?region=…, gs://bucket, file:///dir, mem://
//	CAIRN_NOTIFY            notification bus URL (optional): awssqs://…, gcppubsub://…, nats://…, mem://…
//	CAIRN_KEYS              API keys, id:scope+scope:sha256hex,… (required unless CAIRN_DEV=true)
//	CAIRN_DEV               true: accept requests without a key (laptops only; refused on Lambda and Cloud Run)
//	CAIRN_PRICES            price book, JSON: {"model":{"input_per_million":3,"output_per_million":15}}
//	CAIRN_MAX_REQUEST_TIME  the platform's request limit [30s]; a claim holds at most 4/5 of it
//	CAIRN_LEASE_TTL         lease lifetime without a heartbeat [30s]
//	CAIRN_HEARTBEAT         heartbeat period told to workers [CAIRN_LEASE_TTL/3]
//	CAIRN_FALLBACK_INTERVAL how often a waiting claim looks in the bucket for work whose hint was lost [10s]
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
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/notify"
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
	EnvPort             = "PORT"
	EnvHost             = "CAIRN_HOST"
	EnvLogLevel         = "CAIRN_LOG_LEVEL"
	EnvLogFormat        = "CAIRN_LOG_FORMAT"
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
	EnvFallbackInterval, EnvHost, EnvLogLevel, EnvLogFormat,
	EnvOIDCAudience, EnvOIDCEmails, EnvOIDCIssuer, EnvOIDCJWKSURL,
}

// otherCairnVars are CAIRN_ variables other parts of cairn read (the SDK,
// the test harness); seeing them is no reason to warn.
var otherCairnVars = []string{"CAIRN_SERVER", "CAIRN_KEY", "CAIRN_MINIO_IMAGE", "CAIRN_AZURITE_BIN", "CAIRN_CACHE_DIR", "CAIRN_ADDR"}

// Defaults. The engine's own (lease TTL, heartbeat, maximum request time,
// fallback interval) are engine.Default*, not restated here.
const (
	DefaultPort        = 8080
	DefaultHost        = "127.0.0.1"
	DefaultOIDCIssuer  = "https://accounts.google.com"
	DefaultOIDCJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
)

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

// Config is a validated configuration.
type Config struct {
	Role Role

	Blob   string
	Notify string

	Keys []api.Key
	Dev  bool

	Prices engine.PriceBook

	MaxRequestTime   time.Duration
	LeaseTTL         time.Duration
	Heartbeat        time.Duration
	FallbackInterval time.Duration // 0: the engine's default

	Host string
	Port int

	LogLevel  slog.Level
	LogFormat string // "json" or "text"

	OIDC OIDC

	// OnLambda and OnCloudRun tell where the process runs.
	OnLambda, OnCloudRun bool

	// Warnings are things worth saying at start that are not errors: an
	// unknown CAIRN_ variable (a typo?), a variable this role ignores.
	Warnings []string
}

// OIDC configures OIDC ID-token authentication of the reaper endpoint.
type OIDC struct {
	Audience string
	Emails   []string
	Issuer   string
	JWKSURL  string
}

// Enabled reports whether OIDC tokens are accepted.
func (o OIDC) Enabled() bool { return o.Audience != "" }

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
// entries, as os.Environ returns them). The error, if any, is an *Error
// naming every problem.
func FromEnv(role Role, environ []string) (*Config, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	r := reader{env: env}
	c := &Config{Role: role}
	switch role {
	case API, Reaper, ReaperHTTP:
	default:
		return nil, fmt.Errorf("config: unknown role %q", role)
	}
	_, c.OnLambda = r.lookup(EnvLambdaRuntimeAPI)
	_, c.OnCloudRun = r.lookup(EnvCloudRunService)

	// Stores.
	c.Blob = r.str(EnvBlob)
	if c.Blob == "" {
		r.problem(EnvBlob, "required: the bucket URL, e.g. s3://my-bucket?region=us-east-1, gs://my-bucket, file:///var/lib/cairn, mem://")
	} else {
		r.checkURL(EnvBlob, c.Blob, blob.Schemes(), "bucket")
	}
	c.Notify = r.str(EnvNotify)
	if c.Notify != "" {
		r.checkURL(EnvNotify, c.Notify, notify.Schemes(), "notification bus")
	}

	// Keys.
	c.Dev = r.boolean(EnvDev)
	if raw := r.str(EnvKeys); raw != "" {
		keys, err := api.ParseKeys(raw)
		switch {
		case err != nil:
			r.problem(EnvKeys, err.Error())
		case len(keys) == 0:
			r.problem(EnvKeys, "holds no key: want id:scope+scope:sha256hex entries separated by commas")
		default:
			c.Keys = keys
		}
	}
	if c.Dev {
		switch {
		case c.OnLambda || c.OnCloudRun:
			r.problem(EnvDev, "dev mode (no authentication) is refused on AWS Lambda and Cloud Run: configure CAIRN_KEYS")
		case len(c.Keys) > 0:
			r.problem(EnvDev, "CAIRN_DEV=true turns authentication off, yet CAIRN_KEYS is set: unset one of them")
		}
	}

	// Prices.
	if raw := r.str(EnvPrices); raw != "" {
		c.Prices = r.prices(raw)
	}

	// Durations.
	c.MaxRequestTime = r.duration(EnvMaxRequestTime, engine.DefaultMaxRequestTime, 2*time.Second, time.Hour)
	c.LeaseTTL = r.duration(EnvLeaseTTL, engine.DefaultLeaseTTL, time.Second, 24*time.Hour)
	c.Heartbeat = r.duration(EnvHeartbeat, 0, 100*time.Millisecond, 24*time.Hour)
	if c.Heartbeat == 0 && c.LeaseTTL > 0 {
		c.Heartbeat = c.LeaseTTL / engine.DefaultHeartbeatsPerTTL
	}
	if c.Heartbeat > 0 && c.LeaseTTL > 0 && c.Heartbeat >= c.LeaseTTL {
		r.problem(EnvHeartbeat, fmt.Sprintf("%v must be shorter than the lease TTL %v (CAIRN_LEASE_TTL), or a worker's lease expires between two heartbeats", c.Heartbeat, c.LeaseTTL))
	}
	c.FallbackInterval = r.duration(EnvFallbackInterval, 0, 100*time.Millisecond, time.Hour)

	// Listening.
	c.Port = DefaultPort
	if v := r.str(EnvPort); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			r.problem(EnvPort, fmt.Sprintf("%q: want a TCP port number, 1 to 65535", v))
		} else {
			c.Port = p
		}
	}
	c.Host = DefaultHost
	if v := r.str(EnvHost); v != "" {
		if strings.ContainsAny(v, ":/ ") && net.ParseIP(v) == nil {
			r.problem(EnvHost, fmt.Sprintf("%q: want an IP address or host name to bind, e.g. 127.0.0.1 or 0.0.0.0 (the port comes from PORT)", v))
		} else {
			c.Host = v
		}
	}

	// Logs.
	c.LogLevel = slog.LevelInfo
	if v := r.str(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			r.problem(EnvLogLevel, fmt.Sprintf("%q: want debug, info, warn or error", v))
		}
	}
	c.LogFormat = "text"
	if c.OnLambda || c.OnCloudRun {
		c.LogFormat = "json"
	}
	if v := r.str(EnvLogFormat); v != "" {
		if v != "json" && v != "text" {
			r.problem(EnvLogFormat, fmt.Sprintf("%q: want json or text", v))
		} else {
			c.LogFormat = v
		}
	}

	// Who may call the reaper over HTTP.
	c.OIDC = OIDC{Audience: r.str(EnvOIDCAudience), Issuer: DefaultOIDCIssuer, JWKSURL: DefaultOIDCJWKSURL}
	if v := r.str(EnvOIDCEmails); v != "" {
		for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			if !strings.Contains(e, "@") {
				r.problem(EnvOIDCEmails, fmt.Sprintf("%q is not an email address (a service account's email is expected)", e))
				continue
			}
			c.OIDC.Emails = append(c.OIDC.Emails, e)
		}
	}
	if v := r.str(EnvOIDCIssuer); v != "" {
		c.OIDC.Issuer = v
	}
	if v := r.str(EnvOIDCJWKSURL); v != "" {
		if u, err := url.Parse(v); err != nil || u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) || u.Host == "" {
			r.problem(EnvOIDCJWKSURL, fmt.Sprintf("%q: want an https:// URL of a JSON Web Key Set", v))
		} else {
			c.OIDC.JWKSURL = v
		}
	}
	oidcVars := []string{EnvOIDCAudience, EnvOIDCEmails, EnvOIDCIssuer, EnvOIDCJWKSURL}
	if role == ReaperHTTP {
		if c.OIDC.Audience != "" && len(c.OIDC.Emails) == 0 {
			r.problem(EnvOIDCEmails, "required with CAIRN_OIDC_AUDIENCE: any Google account can mint an ID token for any audience, so the service accounts allowed to call the reaper must be named")
		}
		if c.OIDC.Audience == "" && len(c.OIDC.Emails) > 0 {
			r.problem(EnvOIDCAudience, "required with CAIRN_OIDC_EMAILS: the audience the tokens are minted for (the reaper's URL)")
		}
	} else {
		for _, v := range oidcVars {
			if _, ok := r.lookup(v); ok {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s is set but the %s does not read it", v, role))
			}
		}
		c.OIDC = OIDC{}
	}

	// Role requirements.
	switch role {
	case API:
		if !c.Dev && !r.has(EnvKeys) {
			r.problem(EnvKeys, "required: API keys as id:scope+scope:sha256hex entries separated by commas (the hash is the hex SHA-256 of the secret), or CAIRN_DEV=true on a laptop")
		}
	case ReaperHTTP:
		switch {
		case c.Dev || c.OIDC.Enabled():
		case !r.has(EnvKeys):
			r.problem(EnvKeys, "the reaper endpoint needs a caller it can authenticate: an admin-scoped key in CAIRN_KEYS, OIDC (CAIRN_OIDC_AUDIENCE and CAIRN_OIDC_EMAILS), or CAIRN_DEV=true on a laptop")
		case len(c.Keys) > 0 && !hasAdmin(c.Keys):
			r.problem(EnvKeys, "no key has the admin scope, which the reaper endpoint needs (or configure OIDC: CAIRN_OIDC_AUDIENCE and CAIRN_OIDC_EMAILS)")
		}
	}

	// Typos.
	for k := range env {
		if strings.HasPrefix(k, "CAIRN_") && !slices.Contains(Known, k) && !slices.Contains(otherCairnVars, k) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("unknown variable %s ignored (known: %s)", k, strings.Join(Known, ", ")))
		}
	}
	slices.Sort(c.Warnings)

	if len(r.problems) > 0 {
		return nil, &Error{Role: role, Problems: r.problems}
	}
	return c, nil
}

func hasAdmin(keys []api.Key) bool {
	for _, k := range keys {
		if slices.Contains(k.Scopes, api.ScopeAdmin) {
			return true
		}
	}
	return false
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// Addr is the address the HTTP server listens on.
func (c *Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// EngineConfig is the engine configuration, with bus and logger.
func (c *Config) EngineConfig(bus notify.Bus, log *slog.Logger) engine.Config {
	return engine.Config{
		LeaseTTL:          c.LeaseTTL,
		HeartbeatInterval: c.Heartbeat,
		MaxRequestTime:    c.MaxRequestTime,
		FallbackInterval:  c.FallbackInterval,
		Prices:            c.Prices,
		Bus:               bus,
		Logger:            log,
	}
}

// APIConfig is the API configuration.
func (c *Config) APIConfig(log *slog.Logger) api.Config {
	return api.Config{Keys: c.Keys, DevMode: c.Dev, Logger: log}
}

// Logger returns the process logger writing to w: JSON on the clouds (on
// Cloud Run with the field names Cloud Logging reads: severity, message,
// time), text on a terminal.
func (c *Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	if c.OnCloudRun {
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				a.Key = "severity"
				if l, ok := a.Value.Any().(slog.Level); ok && l == slog.LevelWarn {
					a.Value = slog.StringValue("WARNING")
				}
			case slog.MessageKey:
				a.Key = "message"
			}
			return a
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// reader collects problems while reading variables.
type reader struct {
	env      map[string]string
	problems []Problem
}

func (r *reader) lookup(k string) (string, bool) {
	v, ok := r.env[k]
	return v, ok
}

// has reports whether k is set to something other than blanks.
func (r *reader) has(k string) bool { return strings.TrimSpace(r.env[k]) != "" }

func (r *reader) str(k string) string { return strings.TrimSpace(r.env[k]) }

func (r *reader) problem(k, msg string) {
	r.problems = append(r.problems, Problem{Var: k, Message: msg})
}

func (r *reader) boolean(k string) bool {
	v := r.str(k)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.problem(k, fmt.Sprintf("%q: want true or false", v))
	}
	return b
}

// duration parses a Go duration in [min, max]; def when unset.
func (r *reader) duration(k string, def, min, max time.Duration) time.Duration {
	v := r.str(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if n, nerr := strconv.Atoi(v); nerr == nil {
			r.problem(k, fmt.Sprintf("%q has no unit: write %ds for seconds (Go duration syntax: 500ms, 30s, 5m)", v, n))
		} else {
			r.problem(k, fmt.Sprintf("%q: want a duration such as 500ms, 30s or 5m", v))
		}
		return 0
	}
	if d < min || d > max {
		r.problem(k, fmt.Sprintf("%v is out of range: want %v to %v", d, min, max))
		return 0
	}
	return d
}

// checkURL checks that a store URL parses and that this build has a driver
// for its scheme.
func (r *reader) checkURL(k, raw string, schemes []string, what string) {
	u, err := url.Parse(raw)
	if err != nil {
		r.problem(k, fmt.Sprintf("not a URL: %v", redactErr(err, raw)))
		return
	}
	if u.Scheme == "" {
		r.problem(k, fmt.Sprintf("no scheme: want a %s URL such as %s", what, examples(what)))
		return
	}
	if !slices.Contains(schemes, strings.ToLower(u.Scheme)) {
		r.problem(k, fmt.Sprintf("scheme %q: this build has no %s driver for it (built with: %s)", u.Scheme, what, strings.Join(schemes, ", ")))
	}
}

func examples(what string) string {
	if what == "bucket" {
		return "s3://bucket?region=us-east-1 or gs://bucket"
	}
	return "awssqs://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE?region=REGION or nats://127.0.0.1:4222"
}

func redactErr(err error, raw string) string {
	// url.Parse errors quote the URL, which may carry a password.
	return strings.ReplaceAll(err.Error(), raw, "<URL>")
}

// prices decodes a price book strictly: unknown fields and negative prices
// are errors.
func (r *reader) prices(raw string) engine.PriceBook {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var book engine.PriceBook
	if err := dec.Decode(&book); err != nil {
		r.problem(EnvPrices, fmt.Sprintf("not a price book: %v; want JSON such as {\"claude-sonnet\":{\"input_per_million\":3,\"output_per_million\":15}}", err))
		return nil
	}
	if dec.More() {
		r.problem(EnvPrices, "trailing data after the JSON object")
		return nil
	}
	models := make([]string, 0, len(book))
	for m := range book {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		p := book[m]
		if m == "" {
			r.problem(EnvPrices, "a model name is empty")
		}
		if p.InputPerMillion < 0 || p.OutputPerMillion < 0 {
			r.problem(EnvPrices, fmt.Sprintf("model %q: prices must not be negative", m))
		}
	}
	return book
}

package config_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
)

var (
	workerHash = auth.HashSecret("worker-secret")
	adminHash  = auth.HashSecret("admin-secret")
	keys       = "w1:worker:" + workerHash + ",ops:admin:" + adminHash
)

func load(t *testing.T, role config.Role, env ...string) (*config.Config, *config.Error) {
	t.Helper()
	c, err := config.FromEnv(role, env)
	if err == nil {
		return c, nil
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("FromEnv: %v is not a *config.Error", err)
	}
	return nil, ce
}

func TestDefaults(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS="+keys)
	if perr != nil {
		t.Fatal(perr)
	}
	if c.MaxRequestTime != 30*time.Second || c.LeaseTTL != 30*time.Second || c.Heartbeat != 10*time.Second {
		t.Errorf("durations: max request %v, ttl %v, heartbeat %v", c.MaxRequestTime, c.LeaseTTL, c.Heartbeat)
	}
	if c.Addr() != "127.0.0.1:8080" {
		t.Errorf("addr %q, want 127.0.0.1:8080", c.Addr())
	}
	if len(c.Keys) != 2 || c.Keys[1].ID != "ops" || c.Dev {
		t.Errorf("keys %+v dev %v", c.Keys, c.Dev)
	}
	if c.LogFormat != "text" || c.LogLevel != slog.LevelInfo {
		t.Errorf("log %s %v", c.LogFormat, c.LogLevel)
	}
	if c.OIDC.Enabled() {
		t.Error("OIDC enabled without configuration")
	}
	ec := c.EngineConfig(nil, nil)
	if ec.MaxRequestTime != 30*time.Second || ec.HeartbeatInterval != 10*time.Second || ec.FallbackInterval != 0 {
		t.Errorf("engine config %+v", ec)
	}
}

func TestEverythingSet(t *testing.T) {
	c, perr := load(t, config.API,
		"CAIRN_BLOB=file:///tmp/x", "CAIRN_NOTIFY=nats://127.0.0.1:4222?subject=s", "CAIRN_KEYS="+keys,
		`CAIRN_PRICES={"m1":{"input_per_million":3,"output_per_million":15}}`,
		"CAIRN_MAX_REQUEST_TIME=15m", "CAIRN_LEASE_TTL=1m", "CAIRN_HEARTBEAT=15s", "CAIRN_FALLBACK_INTERVAL=2s",
		"PORT=9999", "CAIRN_HOST=0.0.0.0", "CAIRN_LOG_LEVEL=debug", "CAIRN_LOG_FORMAT=json")
	if perr != nil {
		t.Fatal(perr)
	}
	if c.Prices["m1"].OutputPerMillion != 15 {
		t.Errorf("prices %+v", c.Prices)
	}
	if c.MaxRequestTime != 15*time.Minute || c.LeaseTTL != time.Minute || c.Heartbeat != 15*time.Second || c.FallbackInterval != 2*time.Second {
		t.Errorf("durations %v %v %v %v", c.MaxRequestTime, c.LeaseTTL, c.Heartbeat, c.FallbackInterval)
	}
	if c.Addr() != "0.0.0.0:9999" || c.LogLevel != slog.LevelDebug || c.LogFormat != "json" {
		t.Errorf("addr %s level %v format %s", c.Addr(), c.LogLevel, c.LogFormat)
	}
	if c.Notify == "" {
		t.Error("notify lost")
	}
}

// TestAllProblemsTogether: one error names every bad variable, once each.
func TestAllProblemsTogether(t *testing.T) {
	_, perr := load(t, config.API,
		"CAIRN_NOTIFY=kafka://x",
		"CAIRN_KEYS=w1:worker:nothex",
		`CAIRN_PRICES={"m":{"input_per_million":-1}}`,
		"CAIRN_MAX_REQUEST_TIME=30",
		"CAIRN_LEASE_TTL=soon",
		"CAIRN_HEARTBEAT=0.5s",
		"PORT=http",
		"CAIRN_LOG_LEVEL=loud",
		"CAIRN_DEV=maybe",
	)
	if perr == nil {
		t.Fatal("no error")
	}
	want := map[string]string{
		"CAIRN_BLOB":             "required",
		"CAIRN_NOTIFY":           `scheme "kafka"`,
		"CAIRN_KEYS":             "64 hex digits",
		"CAIRN_PRICES":           "negative",
		"CAIRN_MAX_REQUEST_TIME": "write 30s",
		"CAIRN_LEASE_TTL":        "want a duration",
		"PORT":                   "TCP port",
		"CAIRN_LOG_LEVEL":        "debug, info",
		"CAIRN_DEV":              "true or false",
	}
	seen := map[string]int{}
	for _, p := range perr.Problems {
		seen[p.Var]++
		if w, ok := want[p.Var]; ok && !strings.Contains(p.Message, w) {
			t.Errorf("%s: %q does not say %q", p.Var, p.Message, w)
		}
	}
	for v := range want {
		if seen[v] != 1 {
			t.Errorf("%s reported %d times, want once", v, seen[v])
		}
	}
	if len(perr.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(perr.Problems), len(want), perr)
	}
	msg := perr.Error()
	if !strings.HasPrefix(msg, "cairn api: invalid configuration (9 problems):\n  - ") {
		t.Errorf("message:\n%s", msg)
	}
	t.Logf("the error reads:\n%s", msg)
}

func TestKeysRequired(t *testing.T) {
	_, perr := load(t, config.API, "CAIRN_BLOB=mem://")
	if perr == nil || len(perr.Problems) != 1 || perr.Problems[0].Var != "CAIRN_KEYS" {
		t.Fatalf("got %v", perr)
	}
	if _, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true"); perr != nil {
		t.Fatalf("dev mode: %v", perr)
	}
	// The scheduled reaper serves no request: no key needed.
	if _, perr := load(t, config.Reaper, "CAIRN_BLOB=mem://"); perr != nil {
		t.Fatalf("reaper: %v", perr)
	}
	// Empty key list.
	_, perr = load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS=, ,")
	if perr == nil || !strings.Contains(perr.Error(), "CAIRN_KEYS") {
		t.Fatalf("blank keys: %v", perr)
	}
}

func TestDevModeRefused(t *testing.T) {
	for _, platform := range []string{"AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001", "K_SERVICE=cairn-api"} {
		_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", platform)
		if perr == nil || perr.Problems[0].Var != "CAIRN_DEV" {
			t.Errorf("%s: dev mode accepted: %v", platform, perr)
		}
	}
	_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_KEYS="+keys)
	if perr == nil || !strings.Contains(perr.Error(), "unset one of them") {
		t.Errorf("dev with keys: %v", perr)
	}
}

func TestPlatformDefaults(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS="+keys, "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001")
	if perr != nil {
		t.Fatal(perr)
	}
	if !c.OnLambda || c.OnCloudRun || c.LogFormat != "json" {
		t.Errorf("lambda: %+v", c)
	}
	c, perr = load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_KEYS="+keys, "K_SERVICE=cairn-api")
	if perr != nil {
		t.Fatal(perr)
	}
	if c.OnLambda || !c.OnCloudRun || c.LogFormat != "json" {
		t.Errorf("cloud run: %+v", c)
	}
}

func TestHeartbeatVsTTL(t *testing.T) {
	_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_LEASE_TTL=10s", "CAIRN_HEARTBEAT=10s")
	if perr == nil || perr.Problems[0].Var != "CAIRN_HEARTBEAT" || !strings.Contains(perr.Problems[0].Message, "shorter than the lease TTL") {
		t.Fatalf("got %v", perr)
	}
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_LEASE_TTL=9s")
	if perr != nil || c.Heartbeat != 3*time.Second {
		t.Fatalf("heartbeat default: %v %v", c, perr)
	}
	_, perr = load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_MAX_REQUEST_TIME=1s")
	if perr == nil || !strings.Contains(perr.Error(), "out of range") {
		t.Fatalf("tiny max request time: %v", perr)
	}
}

func TestPrices(t *testing.T) {
	for _, bad := range []string{`[1]`, `{"m":{"input_per_milion":1}}`, `{"m":{}} x`, `{"":{}}`} {
		if _, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_PRICES="+bad); perr == nil || perr.Problems[0].Var != "CAIRN_PRICES" {
			t.Errorf("%s accepted: %v", bad, perr)
		}
	}
}

func TestReaperHTTPAuth(t *testing.T) {
	base := []string{"CAIRN_BLOB=mem://"}
	cases := []struct {
		name string
		env  []string
		bad  string // the variable reported, "" for valid
	}{
		{"nothing", nil, "CAIRN_KEYS"},
		{"worker key only", []string{"CAIRN_KEYS=w1:worker:" + workerHash}, "CAIRN_KEYS"},
		{"admin key", []string{"CAIRN_KEYS=" + keys}, ""},
		{"oidc", []string{"CAIRN_OIDC_AUDIENCE=https://reaper.example", "CAIRN_OIDC_EMAILS=sched@p.iam.gserviceaccount.com"}, ""},
		{"oidc without emails", []string{"CAIRN_OIDC_AUDIENCE=https://reaper.example"}, "CAIRN_OIDC_EMAILS"},
		{"emails without audience", []string{"CAIRN_KEYS=" + keys, "CAIRN_OIDC_EMAILS=a@b"}, "CAIRN_OIDC_AUDIENCE"},
		{"bad email", []string{"CAIRN_OIDC_AUDIENCE=x", "CAIRN_OIDC_EMAILS=nobody"}, "CAIRN_OIDC_EMAILS"},
		{"plain http jwks", []string{"CAIRN_KEYS=" + keys, "CAIRN_OIDC_JWKS_URL=http://example.com/certs"}, "CAIRN_OIDC_JWKS_URL"},
		{"loopback jwks", []string{"CAIRN_KEYS=" + keys, "CAIRN_OIDC_JWKS_URL=http://127.0.0.1:1/certs"}, ""},
		{"dev", []string{"CAIRN_DEV=true"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, perr := load(t, config.ReaperHTTP, append(base, tc.env...)...)
			switch {
			case tc.bad == "" && perr != nil:
				t.Fatalf("refused: %v", perr)
			case tc.bad != "" && perr == nil:
				t.Fatalf("accepted: %+v", c)
			case tc.bad != "" && perr.Problems[0].Var != tc.bad:
				t.Fatalf("reported %v, want %s", perr, tc.bad)
			}
		})
	}
	// The API ignores the OIDC variables, and says so.
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_OIDC_AUDIENCE=x")
	if perr != nil || c.OIDC.Enabled() || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "does not read it") {
		t.Fatalf("api with oidc: %+v %v", c, perr)
	}
}

func TestUnknownVariableWarns(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_LEASE_TL=5s", "CAIRN_SERVER=http://x")
	if perr != nil {
		t.Fatal(perr)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "CAIRN_LEASE_TL") {
		t.Fatalf("warnings %q", c.Warnings)
	}
}

func TestURLProblemsRedactPasswords(t *testing.T) {
	_, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_NOTIFY=nats//user:hunter2@host")
	if perr == nil {
		t.Fatal("accepted a URL without scheme")
	}
	if strings.Contains(perr.Error(), "hunter2") {
		t.Fatalf("the password leaked: %v", perr)
	}
}

// TestSectionsPromoted: the sections read as one flat configuration, and
// the engine's defaults are the engine's.
func TestSectionsPromoted(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_NOTIFY=mem://x", "PORT=9090")
	if perr != nil {
		t.Fatal(perr)
	}
	if c.Blob != c.Store.Blob || c.Notify != c.Bus.Notify || c.Dev != c.Auth.Dev || c.Port != c.Server.Port || c.Addr() != "127.0.0.1:9090" {
		t.Errorf("%+v", c)
	}
	if c.LeaseTTL != engine.DefaultLeaseTTL || c.MaxRequestTime != engine.DefaultMaxRequestTime || c.Heartbeat != engine.DefaultLeaseTTL/engine.DefaultHeartbeatsPerTTL {
		t.Errorf("engine defaults restated differently: %+v", c.Engine)
	}
}

// TestLastEntryWins: a flag is an entry appended to the environment.
func TestLastEntryWins(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "PORT=1", "PORT=2")
	if perr != nil || c.Port != 2 {
		t.Fatalf("%v %v", c, perr)
	}
}

func TestPortZeroIsAnyPort(t *testing.T) {
	c, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "PORT=0")
	if perr != nil || c.Addr() != "127.0.0.1:0" {
		t.Fatalf("%v %v", c, perr)
	}
	if _, perr := load(t, config.API, "CAIRN_BLOB=mem://", "CAIRN_DEV=true", "PORT=65536"); perr == nil {
		t.Fatal("PORT=65536 accepted")
	}
}

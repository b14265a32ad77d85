package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/internal/app"
	"github.com/cairn-dev/cairn/internal/config"
	_ "github.com/cairn-dev/cairn/internal/config/drivers"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/notify"
)

func TestLoadLogsWarnings(t *testing.T) {
	var buf bytes.Buffer
	cfg, log, err := app.Load(config.API, []string{"CAIRN_BLOB=mem://", "CAIRN_DEV=true", "CAIRN_LEASE_TL=5s"}, &buf)
	if err != nil || cfg == nil || log == nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "CAIRN_LEASE_TL") {
		t.Fatalf("warnings not logged: %s", buf.String())
	}
	_, _, err = app.Load(config.API, nil, &buf)
	var bad *config.Error
	if !errors.As(err, &bad) {
		t.Fatalf("got %v, want a *config.Error", err)
	}
}

// A process exits 2 for a bad configuration or a usage error, 1 for
// another error, 0 for none.
func TestExitCode(t *testing.T) {
	usage := errors.New("usage")
	_, _, bad := app.Load(config.API, nil, io.Discard)
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{bad, 2},
		{errors.Join(errors.New("cannot load"), bad), 2},
		{errors.Join(usage, errors.New("flag provided but not defined")), 2},
		{errors.New("cannot start"), 1},
	} {
		if got := app.ExitCode(c.err, usage); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if got := app.ExitCode(usage); got != 1 {
		t.Errorf("ExitCode without usage errors = %d, want 1", got)
	}
}

// Run reports a bad configuration on its writer without running the body,
// and the body's error in the log.
func TestRunReports(t *testing.T) {
	var buf bytes.Buffer
	ran := false
	err := app.Run(config.API, nil, &buf, "cairn test", func(*config.Config, *slog.Logger) error { ran = true; return nil })
	var bad *config.Error
	if !errors.As(err, &bad) || ran || !strings.Contains(buf.String(), bad.Error()) {
		t.Fatalf("bad configuration: err %v, ran %v, output %q", err, ran, buf.String())
	}
	buf.Reset()
	failed := errors.New("cannot start")
	err = app.Run(config.API, []string{"CAIRN_BLOB=mem://", "CAIRN_DEV=true"}, &buf, "cairn test", func(*config.Config, *slog.Logger) error { return failed })
	if !errors.Is(err, failed) || !strings.Contains(buf.String(), "cairn test: failed") {
		t.Fatalf("body error: err %v, log %q", err, buf.String())
	}
}

func TestCloudRunLogger(t *testing.T) {
	cfg, err := config.FromEnv(config.API, []string{"CAIRN_BLOB=mem://", "CAIRN_KEYS=w1:worker:" + auth.HashSecret("w"), "K_SERVICE=cairn-api"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	app.Logger(cfg, &buf).Warn("hello", "k", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if rec["severity"] != "WARNING" || rec["message"] != "hello" || rec["k"] != float64(1) {
		t.Errorf("Cloud Run log line %s", buf.String())
	}
}

func TestOpen(t *testing.T) {
	c, err := config.FromEnv(config.Reaper, []string{"CAIRN_BLOB=mem://", "CAIRN_NOTIFY=mem://open-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := app.Open(ctx, c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Engine.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	// The reaper's bus never subscribes.
	stop, err := app.PublishOnly(rt.Bus).Subscribe(func(notify.Hint) { t.Error("delivered") })
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

// TestAPI runs the API function's code path on a free port: it serves,
// runs the reaper beside it when asked, and stops with nil when its
// context ends.
func TestAPI(t *testing.T) {
	var logs testutil.SyncBuffer // read while the server writes
	cfg, err := config.FromEnv(config.API, []string{"CAIRN_BLOB=mem://", "CAIRN_DEV=true", "PORT=0"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	addr, stop := testutil.Serving(t, func(ctx context.Context, ready func(string)) error {
		return app.API(ctx, cfg, log, app.APIOptions{ReapEvery: 10 * time.Millisecond, Ready: func(a net.Addr) { ready(a.String()) }})
	})
	testutil.GetOK(t, "http://"+addr+api.BasePath+"/healthz")
	// The reaper runs beside the server: a few passes, a period apart.
	testutil.Eventually(t, 5*time.Second, "three reaper passes", func() (bool, string) {
		out := logs.String()
		return strings.Count(out, "cairn reaper: pass") >= 3, out
	})
	if err := stop(); err != nil {
		t.Fatalf("API returned %v", err)
	}
	out := logs.String()
	for _, want := range []string{"DEV MODE", "cairn api: serving", "cairn reaper: a pass every 10ms", "cairn api: stopped", "cairn reaper: stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

func TestAPICannotStart(t *testing.T) {
	cfg, log, err := app.Load(config.API, []string{"CAIRN_BLOB=file:///dev/null/x", "CAIRN_DEV=true"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = app.API(context.Background(), cfg, log, app.APIOptions{})
	if err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Fatalf("got %v", err)
	}
}

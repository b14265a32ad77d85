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

// Command progressfleet is the Go half of the TypeScript SDK's test of
// progress across two API instances (sdk/ts/src/test/progress-fleet.test.ts):
//
//	progressfleet nats         runs a NATS server on 127.0.0.1 and prints "nats <url>", until stopped
//	progressfleet worker       serves workflow "progress-go" on $CAIRN_SERVER: after its event "go",
//	                           its step publishes input.n progress marks {i, sent_ms}
//	progressfleet watch RUN N  follows RUN's stream on $CAIRN_SERVER, prints "open" once it is open,
//	                           then one JSON line {count, in_order, p50_ms, p99_ms} at the run's end
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cairn-dev/cairn"
	"github.com/cairn-dev/cairn/sdk"
)

// mark is one progress message: its index and when it was sent, in
// milliseconds since the epoch (the TypeScript step's are the same).
type mark struct {
	I      int     `json:"i"`
	SentMs float64 `json:"sent_ms"`
}

func nowMs() float64 { return float64(time.Now().UnixNano()) / 1e6 }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch arg(1) {
	case "nats":
		err = runNATS(ctx)
	case "worker":
		err = serve(ctx)
	case "watch":
		err = watch(ctx, arg(2), arg(3))
	default:
		err = errors.New("usage: progressfleet nats | worker | watch RUN N")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "progressfleet:", err)
		os.Exit(1)
	}
}

func arg(i int) string {
	if i < len(os.Args) {
		return os.Args[i]
	}
	return ""
}

func runNATS(ctx context.Context) error {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("nats did not start within 10s")
	}
	fmt.Printf("nats %s\n", ns.ClientURL())
	<-ctx.Done()
	ns.Shutdown()
	return nil
}

func serve(ctx context.Context) error {
	c, err := sdk.ClientFromEnv()
	if err != nil {
		return err
	}
	wf := sdk.Workflow("progress-go", "1").Wait("go", "go").
		Task("send", sdk.Handle(func(ctx sdk.StepContext, in struct{ N int }) (string, error) {
			for i := range in.N {
				if err := sdk.Progress(ctx, mark{I: i, SentMs: nowMs()}); err != nil {
					return "", fmt.Errorf("progress %d: %w", i, err)
				}
			}
			return "sent", nil
		}), sdk.After("go"), sdk.Input("${input}"))
	w := sdk.NewWorker(c, sdk.WithName("go-progress"), sdk.WithLogger(slog.New(slog.DiscardHandler))).Register(wf)
	go func() { <-w.Ready(); os.Stdout.WriteString("ready\n") }()
	return w.Serve(ctx)
}

// watch follows run's stream, timing each progress mark from its sending.
func watch(ctx context.Context, run, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil {
		return err
	}
	c, err := sdk.ClientFromEnv()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lat []float64
	inOrder, open := true, false
	for ev, err := range c.Stream(ctx, run) {
		if err != nil {
			return err
		}
		if !open {
			open = true
			os.Stdout.WriteString("open\n")
		}
		if ev.Kind != cairn.StreamProgress {
			continue
		}
		var m mark
		if err := json.Unmarshal(ev.Progress.Value, &m); err != nil {
			return err
		}
		inOrder = inOrder && m.I == len(lat) && ev.Progress.Missed == 0
		lat = append(lat, nowMs()-m.SentMs)
	}
	out := map[string]any{"count": len(lat), "in_order": inOrder && len(lat) == n}
	if len(lat) > 0 {
		slices.Sort(lat)
		out["p50_ms"], out["p99_ms"] = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

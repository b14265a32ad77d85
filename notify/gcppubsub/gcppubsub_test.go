package gcppubsub_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/bustest"
	cps "github.com/cairn-dev/cairn/notify/gcppubsub"
)

// The tests run Google's in-process Pub/Sub emulator, pstest, on
// 127.0.0.1. It serves the google.pubsub.v1 gRPC API that gocloud's
// gcppubsub driver speaks (its v1 pubsubpb types alias pstest's v2 ones).

func startEmulator(t testing.TB) *pstest.Server {
	t.Helper()
	srv := pstest.NewServerWithAddress("127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	return srv
}

var names atomic.Int64

// channel creates a topic and a subscription on it, and returns the
// gcppubsub URL.
func channel(t testing.TB, srv *pstest.Server, extra string) string {
	t.Helper()
	n := names.Add(1)
	ctx := context.Background()
	topic := fmt.Sprintf("projects/cairn-test/topics/hints-%d", n)
	if _, err := srv.GServer.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil {
		t.Fatal(err)
	}
	sub := fmt.Sprintf("projects/cairn-test/subscriptions/hints-%d", n)
	if _, err := srv.GServer.CreateSubscription(ctx, &pb.Subscription{Name: sub, Topic: topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("gcppubsub://%s?subscription=hints-%d%s", topic, n, extra)
}

func TestConformance(t *testing.T) {
	srv := startEmulator(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	bustest.Run(t, bustest.Harness{
		Kind: bustest.Queue,
		Channel: func(t *testing.T) func(t *testing.T) notify.Bus {
			// A small message limit makes every test exercise splitting.
			url := channel(t, srv, "&max_message_bytes=4096")
			return func(t *testing.T) notify.Bus { return bustest.OpenURL(t, url) }
		},
		Unreachable: func(t *testing.T) (notify.Bus, error) {
			t.Setenv("PUBSUB_EMULATOR_HOST", testinfra.FreeAddr(t))
			return notify.Open(context.Background(), "gcppubsub://projects/p/topics/t?subscription=s")
		},
		Quiet: time.Second,
	})
}

// TestNewOnCallersConn: New uses a connection the caller owns and leaves
// it open on Close.
func TestNewOnCallersConn(t *testing.T) {
	srv := startEmulator(t)
	channel(t, srv, "")
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := names.Load()
	ctx := context.Background()
	b, err := cps.New(ctx, conn, fmt.Sprintf("projects/cairn-test/topics/hints-%d", n), cps.Options{Subscription: fmt.Sprintf("projects/cairn-test/subscriptions/hints-%d", n)})
	if err != nil {
		t.Fatal(err)
	}
	c, stop := bustest.Subscribe(t, b)
	if err := b.Publish(ctx, bustest.Hints("new", 3)); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 10*time.Second, "3 hints", func() bool { return c.Len() == 3 })
	stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The connection is still open: another bus on it works.
	b2, err := cps.New(ctx, conn, fmt.Sprintf("projects/cairn-test/topics/hints-%d", n), cps.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if err := b2.Publish(ctx, bustest.Hints("again", 1)); err != nil {
		t.Fatalf("Publish on the caller's connection after Close: %v", err)
	}
}

func TestPublishOnly(t *testing.T) {
	srv := startEmulator(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	channel(t, srv, "")
	b := bustest.OpenURL(t, fmt.Sprintf("gcppubsub://projects/cairn-test/topics/hints-%d", names.Load()))
	if _, err := b.Subscribe(func(notify.Hint) {}); err == nil {
		t.Fatal("Subscribe on a bus without a subscription succeeded")
	}
	if err := b.Publish(context.Background(), bustest.Hints("po", 1)); err != nil {
		t.Fatal(err)
	}
}

func TestOpenURLErrors(t *testing.T) {
	srv := startEmulator(t)
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	bustest.RefusesURLs(t,
		"gcppubsub://myproject/mytopic",
		"gcppubsub://projects/p/topics/t?bogus=1",
		"gcppubsub://projects/p/topics/t?subscription=a/b",
		"gcppubsub://projects/p/topics/t?publish_timeout=x",
	)
	b := bustest.OpenURL(t, "gcppubsub://projects/p/topics/t?subscription=projects/q/subscriptions/s")
	if got := b.(*cps.Bus).SubscriptionPath(); got != "projects/q/subscriptions/s" {
		t.Errorf("subscription %q", got)
	}
	b = bustest.OpenURL(t, "gcppubsub://projects/p/topics/t?subscription=s")
	if got := b.(*cps.Bus).SubscriptionPath(); got != "projects/p/subscriptions/s" {
		t.Errorf("subscription %q", got)
	}
}

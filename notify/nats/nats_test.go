package nats_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"

	natsgo "github.com/nats-io/nats.go"

	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
	"github.com/cairn-dev/cairn/internal/testutil"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/bustest"
	cnats "github.com/cairn-dev/cairn/notify/nats"
)

var subjects atomic.Int64

func TestConformance(t *testing.T) {
	srv := testnats.Start(t, -1)
	bustest.Run(t, bustest.Harness{
		Kind: bustest.FanOut,
		Channel: func(t *testing.T) func(t *testing.T) notify.Bus {
			subject := fmt.Sprintf("cairn.test.%d", subjects.Add(1))
			return func(t *testing.T) notify.Bus {
				// A small message limit makes every test exercise splitting.
				b, err := cnats.Connect(srv.ClientURL(), cnats.Options{Subject: subject, MaxMessageBytes: 4096})
				if err != nil {
					t.Fatal(err)
				}
				return bustest.Opened(t, b)
			}
		},
		Unreachable: func(t *testing.T) (notify.Bus, error) {
			return notify.Open(context.Background(), "nats://"+testinfra.FreeAddr(t)+"?connect_timeout=1s")
		},
		Quiet: 100 * time.Millisecond,
	})
}

func TestOpenURL(t *testing.T) {
	srv := testnats.Start(t, -1)
	ctx := context.Background()
	b, err := notify.Open(ctx, srv.ClientURL()+"?subject=cairn.url&name=url-test&reconnect_wait=100ms&max_message_bytes=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close(b)
	nb := b.(*cnats.Bus)
	if nb.Subject() != "cairn.url" {
		t.Errorf("subject %q", nb.Subject())
	}
	c, stop := bustest.Subscribe(t, b)
	defer stop()
	if err := b.Publish(ctx, bustest.Hints("url", 20)); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "20 hints", func() bool { return c.Len() == 20 })
	bustest.RefusesURLs(t, "nats://127.0.0.1:1?bogus=1", "nats://127.0.0.1:1?connect_timeout=x", "nats:///nohost")
}

// TestReconnect stops the server: Publish fails at once while it is down;
// once a server is back on the same port, the subscription resumes by
// itself.
func TestReconnect(t *testing.T) {
	srv := testnats.Start(t, -1)
	port := srv.Addr().(*net.TCPAddr).Port
	url := fmt.Sprintf("nats://127.0.0.1:%d?subject=cairn.reconnect&reconnect_wait=50ms", port)
	ctx := context.Background()
	pub, err := notify.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close(pub)
	sub, err := notify.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close(sub)
	c, stop := bustest.Subscribe(t, sub)
	defer stop()
	if err := pub.Publish(ctx, bustest.Hints("up", 1)); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 5*time.Second, "first hint", func() bool { return c.Len() == 1 })

	srv.Shutdown()
	bustest.WaitFor(t, 5*time.Second, "disconnect", func() bool {
		return !pub.(*cnats.Bus).Conn().IsConnected() && !sub.(*cnats.Bus).Conn().IsConnected()
	})
	start := time.Now()
	if err := pub.Publish(ctx, bustest.Hints("down", 1)); err == nil {
		t.Fatal("Publish while disconnected succeeded")
	} else if d := time.Since(start); d > time.Second {
		t.Fatalf("Publish while disconnected took %v", d)
	} else {
		t.Logf("Publish while disconnected: %v", err)
	}

	testnats.Start(t, port)
	bustest.WaitFor(t, 10*time.Second, "reconnect", func() bool {
		return pub.(*cnats.Bus).Conn().IsConnected() && sub.(*cnats.Bus).Conn().IsConnected()
	})
	// The client resubscribes on reconnect; publish until it shows.
	want := bustest.Hints("back", 1)[0]
	// A publish every 20 ms, each given that long to arrive.
	testutil.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, "a hint after reconnect", func() (bool, string) {
		if c.Count(bustest.Key(want)) > 0 {
			return true, ""
		}
		err := pub.Publish(ctx, []notify.Hint{want})
		return false, fmt.Sprintf("last publish: %v", err)
	})
}

// TestStopAfterClose: a stop after the connection closed does not panic
// or block.
func TestStopAfterClose(t *testing.T) {
	srv := testnats.Start(t, -1)
	b, err := cnats.Connect(srv.ClientURL(), cnats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := b.Subscribe(func(notify.Hint) {})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	stop()
	if err := b.Publish(context.Background(), bustest.Hints("closed", 1)); err == nil {
		t.Fatal("Publish on a closed bus succeeded")
	}
}

// TestNewSharesConn: New on a caller's connection does not close it.
func TestNewSharesConn(t *testing.T) {
	srv := testnats.Start(t, -1)
	nc, err := natsgo.Connect(srv.ClientURL(), cnats.ConnectOptions("shared", nil)...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b := cnats.New(nc, cnats.Options{})
	if b.Subject() != cnats.DefaultSubject {
		t.Errorf("default subject %q", b.Subject())
	}
	b.Close()
	if !nc.IsConnected() {
		t.Fatal("Close closed a connection the bus does not own")
	}
}

func BenchmarkWake(b *testing.B) {
	srv := testnats.Start(b, -1)
	pub, err := cnats.Connect(srv.ClientURL(), cnats.Options{Subject: "cairn.bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	sub, err := cnats.Connect(srv.ClientURL(), cnats.Options{Subject: "cairn.bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	bustest.BenchWake(b, pub, sub)
}

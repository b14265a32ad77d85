package sqs_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/internal/testinfra"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/bustest"
	csqs "github.com/cairn-dev/cairn/notify/sqs"
)

// The tests run goaws v0.4.5 (an SQS emulator) as a child process on
// 127.0.0.1, built from testdata/goaws, a module of its own. goaws speaks
// only SQS's awsQuery protocol, hence protocol=query in the URLs.

const queuePool = 64

var (
	goawsOnce sync.Once
	goawsURL  string
	goawsErr  error
	goawsCmd  *exec.Cmd
	nextQueue atomic.Int64

	configureChild = func(*exec.Cmd) {}
)

func TestMain(m *testing.M) {
	// Never reach for real AWS credentials or the instance metadata
	// service: every URL here is anonymous and on 127.0.0.1.
	tmp, _ := os.MkdirTemp("", "cairn-sqs-test")
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Setenv("AWS_CONFIG_FILE", filepath.Join(tmp, "none"))
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(tmp, "none"))
	os.Unsetenv("AWS_PROFILE")
	code := m.Run()
	if goawsCmd != nil {
		goawsCmd.Process.Kill()
		goawsCmd.Wait()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// goaws builds and starts the emulator once per test binary and returns
// its base URL.
func goaws(t testing.TB) string {
	t.Helper()
	goawsOnce.Do(func() { goawsURL, goawsErr = startGoaws() })
	if goawsErr != nil {
		t.Fatalf("goaws: %v", goawsErr)
	}
	return goawsURL
}

func startGoaws() (string, error) {
	bin, dir, err := testinfra.GoBuild(filepath.Join("testdata", "goaws"), ".", "goaws")
	if err != nil {
		return "", err
	}
	var queues []string
	for i := range queuePool {
		queues = append(queues, fmt.Sprintf("q%d", i))
	}
	// A short visibility timeout: SQS is at-least-once, and a ReceiveMessage
	// response lost in transit (the SDK then retries the call) hides its
	// messages until the timeout, on goaws as on AWS. The tests wait 20s.
	args := []string{"-addr", "127.0.0.1:0", "-queues", strings.Join(queues, ","), "-visibility", "8"}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if f := os.Getenv("CAIRN_GOAWS_LOG"); f != "" {
		// Debug aid: goaws's request log.
		cmd.Args = append(cmd.Args, "-debug")
		if w, err := os.Create(f); err == nil {
			cmd.Stderr = w
		}
	}
	configureChild(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	err = cmd.Start()
	os.RemoveAll(dir) // a started binary runs on without its file
	if err != nil {
		return "", err
	}
	goawsCmd = cmd
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		base, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			return "", fmt.Errorf("unexpected goaws output %q", l)
		}
		return base, nil
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("goaws did not start")
	}
}

// queueURL returns the awssqs URL of a fresh queue of the pool.
func queueURL(t testing.TB, extra string) string {
	base := goaws(t)
	n := nextQueue.Add(1) - 1
	if n >= queuePool {
		t.Fatalf("queue pool of %d exhausted", queuePool)
	}
	host := strings.TrimPrefix(base, "http://")
	return fmt.Sprintf("awssqs://%s/100010001000/q%d?region=us-east-1&anonymous=true&protocol=query&endpoint=%s%s", host, n, base, extra)
}

func TestConformance(t *testing.T) {
	bustest.Run(t, bustest.Harness{
		Kind: bustest.Queue,
		Channel: func(t *testing.T) func(t *testing.T) notify.Bus {
			// A small message limit makes every test exercise splitting.
			url := queueURL(t, "&max_message_bytes=4096")
			return func(t *testing.T) notify.Bus { return bustest.OpenURL(t, url) }
		},
		Unreachable: func(t *testing.T) (notify.Bus, error) {
			addr := testinfra.FreeAddr(t)
			return notify.Open(context.Background(), fmt.Sprintf(
				"awssqs://%s/100010001000/q?region=us-east-1&anonymous=true&protocol=query&endpoint=http://%s", addr, addr))
		},
		Wait:  20 * time.Second,
		Quiet: time.Second,
	})
}

// TestPublishTimeoutWithoutDeadline: a Publish whose context has no
// deadline still ends, at publish_timeout.
func TestPublishTimeoutWithoutDeadline(t *testing.T) {
	addr := testinfra.FreeAddr(t)
	b := bustest.OpenURL(t, fmt.Sprintf("awssqs://%s/1/q?region=us-east-1&anonymous=true&endpoint=http://%s&publish_timeout=1s", addr, addr))
	start := time.Now()
	err := b.Publish(context.Background(), bustest.Hints("t", 1))
	if err == nil {
		t.Fatal("Publish to a closed port succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Publish took %v", d)
	}
}

// TestMessageSize: a batch above the default limit (248 KiB) is split
// into messages that goaws, enforcing SQS's 256 KiB, accepts.
func TestMessageSize(t *testing.T) {
	b := bustest.OpenURL(t, queueURL(t, ""))
	c, stop := bustest.Subscribe(t, b)
	defer stop()
	want := bustest.Hints(strings.Repeat("S", 1000), 600) // about 700 KB
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Publish(ctx, want); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 20*time.Second, "600 hints", func() bool { return c.Len() >= len(want) })
}

func TestOpenURLErrors(t *testing.T) {
	bustest.RefusesURLs(t,
		"awssqs:///no-host?region=us-east-1&anonymous=true",
		"awssqs://h/1/q?anonymous=true&bogus=1",
		"awssqs://h/1/q?anonymous=true&protocol=xml",
		"awssqs://h/1/q?anonymous=true&waittime=soon",
	)
	b, err := notify.Open(context.Background(), "awssqs://sqs.us-east-2.amazonaws.com/123456789012/hints?region=us-east-2&anonymous=true")
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close(b)
	if got := b.(*csqs.Bus).QueueURL(); got != "https://sqs.us-east-2.amazonaws.com/123456789012/hints" {
		t.Errorf("queue URL %q", got)
	}
}

// TestDeletesDelivered: messages are deleted once delivered, not left to
// come back after the visibility timeout.
func TestDeletesDelivered(t *testing.T) {
	b := bustest.OpenURL(t, queueURL(t, "&max_message_bytes=4096")).(*csqs.Bus)
	c, stop := bustest.Subscribe(t, b)
	defer stop()
	want := bustest.Hints(strings.Repeat("D", 200), 100) // several messages
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Publish(ctx, want); err != nil {
		t.Fatal(err)
	}
	bustest.WaitFor(t, 20*time.Second, "100 hints", func() bool { return c.Len() >= len(want) })
	left := func() string {
		out, err := b.Client().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(b.QueueURL()),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]
	}
	bustest.WaitFor(t, 5*time.Second, "an empty queue", func() bool { return left() == "0" })
}

// TestClose: Close stops the subscriptions still running; Publish and
// Subscribe fail after it, and stop stays callable.
func TestClose(t *testing.T) {
	b, err := notify.Open(context.Background(), queueURL(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	stop, err := b.Subscribe(func(notify.Hint) { calls.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := notify.Close(b); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not stop the long poll")
	}
	stop()
	if err := b.Publish(context.Background(), bustest.Hints("closed", 1)); err == nil {
		t.Error("Publish after Close succeeded")
	}
	if _, err := b.Subscribe(func(notify.Hint) {}); err == nil {
		t.Error("Subscribe after Close succeeded")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("fn called %d times", n)
	}
}

// Package gcbus runs a notification bus on a gocloud.dev pubsub Topic and
// Subscription (the Pub/Sub driver uses it): publishing batches, and a
// receive loop that survives errors.
package gcbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gocloud.dev/pubsub"

	"github.com/cairn-dev/cairn/internal/ctxsleep"
	"github.com/cairn-dev/cairn/notify"
)

// Bus publishes on a gocloud topic and subscribes through gocloud
// subscriptions opened on demand.
type Bus struct {
	// Name prefixes errors and logs ("sqs", "gcppubsub").
	Name string
	// Topic receives published messages.
	Topic *pubsub.Topic
	// OpenSubscription opens one more receiver on the queue; each
	// Subscribe opens one, and reopens it after an error.
	OpenSubscription func() (*pubsub.Subscription, error)
	// MaxMessageBytes caps one message.
	MaxMessageBytes int
	// PublishTimeout bounds a Publish whose context has no deadline.
	PublishTimeout time.Duration
	// Logger receives receive errors and undecodable messages.
	Logger *slog.Logger
	// OnClose runs after the topic is shut down (closes connections).
	OnClose func() error
}

// Publish sends hints as JSON batch messages, concurrently when there are
// several (the topic batches them into one request where it can), and
// waits until the service accepted them or ctx ends.
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(hints) == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.PublishTimeout)
		defer cancel()
	}
	msgs, encErr := notify.Encode(hints, b.MaxMessageBytes)
	errs := make([]error, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Go(func() { errs[i] = b.Topic.Send(ctx, &pubsub.Message{Body: m}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: publish %d hints: %w", b.Name, len(hints), err)
	}
	return encErr
}

// Subscribe receives messages and hands their hints to fn, acknowledging
// each message after, until stop. A receive error is logged, and
// receiving resumes on a new subscription after a backoff of up to 30s.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	sub, err := b.OpenSubscription()
	if err != nil {
		return nil, fmt.Errorf("%s: subscribe: %w", b.Name, err)
	}
	sink := notify.NewSink(fn)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.receive(ctx, sub, sink)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			sink.Close()
		})
	}, nil
}

func (b *Bus) receive(ctx context.Context, sub *pubsub.Subscription, sink *notify.Sink) {
	defer func() { shutdown(sub) }()
	var backoff time.Duration
	for {
		if sub == nil {
			var err error
			if sub, err = b.OpenSubscription(); err != nil {
				if !b.pause(ctx, &backoff, err) {
					return
				}
				continue
			}
		}
		m, err := sub.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A gocloud subscription stays failed after an error: a new
			// one is needed. Messages it had prefetched come back after
			// the queue's visibility (ack) timeout.
			shutdown(sub)
			sub = nil
			if !b.pause(ctx, &backoff, err) {
				return
			}
			continue
		}
		backoff = 0
		sink.DeliverMessage(m.Body, b.Logger)
		m.Ack()
	}
}

// pause logs err and waits out the next backoff; false when ctx ended.
func (b *Bus) pause(ctx context.Context, backoff *time.Duration, err error) bool {
	*backoff = min(max(2**backoff, 250*time.Millisecond), 30*time.Second)
	b.Logger.Warn(b.Name+": receiving notifications failed; retrying", "err", err, "backoff", *backoff)
	return ctxsleep.Sleep(ctx, *backoff) == nil
}

func shutdown(sub *pubsub.Subscription) {
	if sub == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = sub.Shutdown(ctx) // flushes pending acks
}

// closeTimeout bounds the flush of sends still pending at Close: their
// Publish calls have returned already, so nobody waits for them.
const closeTimeout = 2 * time.Second

// Close flushes and stops the publishing side, then runs OnClose. Stop
// subscriptions first.
func (b *Bus) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := b.Topic.Shutdown(ctx)
	if b.OnClose != nil {
		err = errors.Join(err, b.OnClose())
	}
	return err
}

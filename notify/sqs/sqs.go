// Package sqs is an AWS SQS notification bus, registered as "awssqs" with
// notify.Open. It talks to SQS directly through the AWS SDK's SQS client
// (SendMessageBatch, ReceiveMessage, DeleteMessageBatch). The URL has
// gocloud.dev's form, which earlier versions of this driver were built on:
//
//	awssqs://sqs.us-east-2.amazonaws.com/123456789012/cairn-hints?region=us-east-2
//
// The host and path, prefixed with https://, are the queue URL; the query
// takes gocloud's AWS parameters (region, endpoint, profile, anonymous,
// role, fips, dualstack, ...; see gocloud.dev/aws.V2ConfigFromURLParams)
// and gocloud's SQS subscription parameters (raw, snstopicarn, nacklazy,
// waittime), plus:
//
//   - waittime: the ReceiveMessage long poll, whole seconds up to SQS's
//     20 [20s]; waittime=0s short-polls every 250ms
//   - raw=true: take message bodies as they are; by default a body that
//     has the shape of an SNS notification (an SNS topic delivering to the
//     queue without raw delivery) is unwrapped, only if it comes from
//     snstopicarn when that is set
//   - nacklazy: accepted for compatibility; hints are never nacked
//   - protocol=query: speak SQS's older awsQuery protocol instead of
//     AWS JSON (SQS accepts both; emulators such as goaws only the first)
//   - max_message_bytes: split batches above this size
//     [notify.DefaultMaxMessageBytes, below SQS's 256 KiB]
//   - publish_timeout: bounds a Publish whose context has no deadline [10s]
//
// # Queue semantics
//
// An SQS queue hands each message to ONE receiver. Every engine instance
// subscribes to the same queue, so the hints of a message are consumed by
// one instance: its hub serves them to a waiting claim that matches. When
// that instance has no matching claim, nothing else is woken; the work is
// found by the other instances' fallback scans and the reaper's
// re-announcement, within the engine's fallback bound (see package
// notify). A message is acknowledged (deleted) once its hints have been
// handed to the subscriber's fn; one that is received but not acknowledged
// (the instance died, or stopped while a receive was in flight) comes back
// after the queue's visibility timeout, a duplicate the bucket makes
// harmless. Keep the visibility timeout short (30s is SQS's default) and
// set a retention period of minutes, not days: an old hint is worthless.
//
// # Permissions
//
// Publishing needs sqs:SendMessage (which covers SendMessageBatch);
// subscribing needs sqs:ReceiveMessage and sqs:DeleteMessage (which covers
// DeleteMessageBatch). Credentials come from the usual AWS chain
// (environment, shared config, the Lambda role).
package sqs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
	gcaws "gocloud.dev/aws"

	"github.com/cairn-dev/cairn/internal/ctxsleep"
	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/internal/busurl"
)

// Scheme is the URL scheme this package registers (gocloud's SQS scheme).
const Scheme = "awssqs"

func init() {
	notify.Register(Scheme, func(ctx context.Context, u *url.URL) (notify.Bus, error) { return OpenURL(ctx, u) })
}

// SQS's limits.
const (
	// maxBatchEntries is the most entries of a SendMessageBatch or
	// DeleteMessageBatch, and the most messages a ReceiveMessage returns.
	maxBatchEntries = 10
	// maxWaitSeconds is the longest ReceiveMessage long poll.
	maxWaitSeconds = 20
)

const (
	// shortPollPause is the pause after an empty short poll.
	shortPollPause = 250 * time.Millisecond
	// maxBackoff caps the pause after receive errors.
	maxBackoff = 30 * time.Second
	// deleteTimeout bounds the deletion of delivered messages, which runs
	// to its end even when stop is called meanwhile (stop waits for it).
	deleteTimeout = 5 * time.Second
	// publishConcurrency bounds the send requests of one Publish in
	// flight at once.
	publishConcurrency = 4
)

// base64EncodedKey is the message attribute gocloud.dev's SQS and SNS
// topics set on a body they base64-encoded; such bodies are decoded.
const base64EncodedKey = "base64encoded"

// Options tune a Bus. Zero fields take the defaults in brackets.
type Options struct {
	// MaxMessageBytes caps one message [notify.DefaultMaxMessageBytes]. A
	// SendMessageBatch carries at most 10 messages whose sizes add up to
	// at most the larger of this and notify.DefaultMaxMessageBytes.
	MaxMessageBytes int
	// WaitTime is the ReceiveMessage long poll, in whole seconds up to
	// 20; negative (or under a second) short-polls, pausing 250ms after
	// an empty receive [20s].
	WaitTime time.Duration
	// PublishTimeout bounds a Publish whose context has no deadline
	// [10s].
	PublishTimeout time.Duration
	// Raw takes received message bodies as they are. When false, a body
	// with the shape of an SNS notification is unwrapped (an SNS topic
	// delivering to the queue without raw message delivery).
	Raw bool
	// SNSTopicARN, when Raw is false, unwraps SNS notifications only from
	// this topic; others are taken raw.
	SNSTopicARN string
	// NackLazy is accepted for compatibility with gocloud's option; the
	// bus never nacks a message, so it has no effect.
	NackLazy bool
	// Logger receives receive errors and undecodable messages
	// [slog.Default()].
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = notify.DefaultMaxMessageBytes
	}
	if o.WaitTime == 0 {
		o.WaitTime = maxWaitSeconds * time.Second
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Bus is an SQS notification bus.
type Bus struct {
	client *sqs.Client
	qURL   string
	opts   Options
	log    *slog.Logger
	// batchBytes caps the sum of the bodies of one SendMessageBatch.
	batchBytes int
	// waitSeconds is ReceiveMessage's WaitTimeSeconds (0: short poll).
	waitSeconds int32

	mu     sync.Mutex
	closed bool
	subs   map[*subscription]struct{}
}

// New returns a bus on the queue at queueURL (https://...), through
// client.
func New(client *sqs.Client, queueURL string, opts Options) *Bus {
	opts.setDefaults()
	wait := int32(0)
	if opts.WaitTime > 0 {
		wait = int32(min(opts.WaitTime/time.Second, maxWaitSeconds))
	}
	return &Bus{
		client:      client,
		qURL:        queueURL,
		opts:        opts,
		log:         opts.Logger.With("queue", queueURL),
		batchBytes:  max(opts.MaxMessageBytes, notify.DefaultMaxMessageBytes),
		waitSeconds: wait,
		subs:        map[*subscription]struct{}{},
	}
}

// OpenURL opens a bus from an awssqs URL as described in the package
// documentation.
func OpenURL(ctx context.Context, u *url.URL) (*Bus, error) {
	var opts Options
	query := false
	// The parameters not in the table are AWS's, checked below.
	q, err := busurl.Params{
		"protocol": func(v string) error {
			switch v {
			case "query":
				query = true
			case "json", "":
			default:
				return fmt.Errorf("want query or json, not %q", v)
			}
			return nil
		},
		"max_message_bytes": busurl.Int(&opts.MaxMessageBytes),
		"publish_timeout":   busurl.Duration(&opts.PublishTimeout),
		"waittime": func(v string) (err error) {
			opts.WaitTime, err = time.ParseDuration(v)
			if err == nil && opts.WaitTime == 0 {
				opts.WaitTime = -1
			}
			return err
		},
		"raw":         busurl.Bool(&opts.Raw),
		"nacklazy":    busurl.Bool(&opts.NackLazy),
		"snstopicarn": busurl.String(&opts.SNSTopicARN),
	}.SetKnown("sqs", u.Query())
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, errors.New("sqs: URL has no queue host")
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if query {
			o.Protocol = awsquery.New(schemas.AmazonSQS)
		}
	})
	return New(client, "https://"+path.Join(u.Host, u.Path), opts), nil
}

// Client returns the bus's SQS client.
func (b *Bus) Client() *sqs.Client { return b.client }

// QueueURL returns the queue's URL.
func (b *Bus) QueueURL() string { return b.qURL }

var errClosed = errors.New("sqs: bus closed")

// Publish sends hints as one JSON batch message (several above the size
// limit, grouped into SendMessageBatch requests of up to 10 messages, sent
// concurrently). It returns when SQS has accepted them all, or with the
// first errors (the context's among them).
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(hints) == 0 {
		return nil
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return errClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.opts.PublishTimeout)
		defer cancel()
	}
	msgs, encErr := notify.Encode(hints, b.opts.MaxMessageBytes)
	batches := groupBatches(msgs, maxBatchEntries, b.batchBytes)
	errs := make([]error, len(batches))
	if len(batches) == 1 {
		errs[0] = b.send(ctx, batches[0])
	} else {
		sem := make(chan struct{}, publishConcurrency)
		var wg sync.WaitGroup
		for i, batch := range batches {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				errs[i] = b.send(ctx, batch)
			})
		}
		wg.Wait()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqs: publish %d hints: %w", len(hints), err)
	}
	return encErr
}

// groupBatches groups msgs, in order, into batches of at most maxEntries
// messages whose sizes add up to at most maxBytes (a message larger than
// maxBytes goes alone).
func groupBatches(msgs [][]byte, maxEntries, maxBytes int) [][][]byte {
	var (
		out  [][][]byte
		cur  [][]byte
		size int
	)
	for _, m := range msgs {
		if len(cur) > 0 && (len(cur) == maxEntries || size+len(m) > maxBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, m)
		size += len(m)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// send sends one batch: SendMessage for a single message, SendMessageBatch
// otherwise, resending once the entries SQS failed on its side.
func (b *Bus) send(ctx context.Context, batch [][]byte) error {
	if len(batch) == 1 {
		_, err := b.client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:    aws.String(b.qURL),
			MessageBody: aws.String(string(batch[0])),
		}, withSafeBody)
		return err
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(batch))
	for i, m := range batch {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(string(m)),
		}
	}
	for attempt := 0; ; attempt++ {
		out, err := b.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{
			QueueUrl: aws.String(b.qURL),
			Entries:  entries,
		}, withSafeBody)
		if err != nil {
			return err
		}
		if len(out.Failed) == 0 {
			return nil
		}
		retry := entries[:0:0]
		var errs []error
		for _, f := range out.Failed {
			if !f.SenderFault && attempt == 0 {
				for _, e := range entries {
					if aws.ToString(e.Id) == aws.ToString(f.Id) {
						retry = append(retry, e)
					}
				}
				continue
			}
			errs = append(errs, fmt.Errorf("SendMessageBatch entry %s: %s: %s", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
		}
		if len(errs) > 0 || len(retry) == 0 {
			return errors.Join(errs...)
		}
		entries = retry
	}
}

// subscription is one Subscribe's receive loop.
type subscription struct {
	cancel context.CancelFunc
	done   chan struct{}
	sink   *notify.Sink
	once   sync.Once
}

func (s *subscription) stop() {
	s.once.Do(func() {
		s.cancel()
		<-s.done
		s.sink.Close()
	})
}

// Subscribe receives messages from the queue (long polls of WaitTime, up
// to 10 messages each) and hands their hints to fn, deleting the messages
// after, until stop. Each message goes to one subscriber of the queue (one
// instance), not to all. A receive error (the queue unreachable,
// credentials expired) is logged and receiving resumes after a backoff of
// up to 30s. stop ends a receive in flight and waits for the loop, and the
// deletion of what it delivered, to finish.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscription{cancel: cancel, done: make(chan struct{}), sink: notify.NewSink(fn)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("sqs: subscribe: %w", errClosed)
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go func() {
		defer close(s.done)
		b.receive(ctx, s.sink)
	}()
	return func() {
		s.stop()
		b.mu.Lock()
		delete(b.subs, s)
		b.mu.Unlock()
	}, nil
}

func (b *Bus) receive(ctx context.Context, sink *notify.Sink) {
	in := &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(b.qURL),
		MaxNumberOfMessages:   maxBatchEntries,
		WaitTimeSeconds:       b.waitSeconds,
		MessageAttributeNames: []string{"All"},
	}
	var backoff time.Duration
	for ctx.Err() == nil {
		out, err := b.client.ReceiveMessage(ctx, in, withSafeBody)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 250*time.Millisecond), maxBackoff)
			b.log.Warn("sqs: receiving notifications failed; retrying", "err", err, "backoff", backoff)
			if ctxsleep.Sleep(ctx, backoff) != nil {
				return
			}
			continue
		}
		backoff = 0
		if len(out.Messages) == 0 {
			if b.waitSeconds == 0 && ctxsleep.Sleep(ctx, shortPollPause) != nil {
				return
			}
			continue
		}
		// Deliver everything received, even when stop was called
		// meanwhile: the messages are ours until the visibility timeout,
		// and handing them over is quick.
		handles := make([]*string, 0, len(out.Messages))
		for _, m := range out.Messages {
			if !sink.DeliverMessage(b.body(m), b.log) {
				break
			}
			handles = append(handles, m.ReceiptHandle)
		}
		b.delete(ctx, handles)
	}
}

// delete deletes delivered messages; a failure only means they come back
// after the visibility timeout.
func (b *Bus) delete(ctx context.Context, handles []*string) {
	if len(handles) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	entries := make([]types.DeleteMessageBatchRequestEntry, len(handles))
	for i, h := range handles {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: h}
	}
	out, err := b.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(b.qURL),
		Entries:  entries,
	}, withSafeBody)
	if err != nil {
		b.log.Warn("sqs: deleting delivered notifications failed; they will be redelivered", "err", err, "messages", len(handles))
		return
	}
	if len(out.Failed) > 0 {
		f := out.Failed[0]
		b.log.Warn("sqs: deleting delivered notifications failed; they will be redelivered",
			"messages", len(out.Failed), "code", aws.ToString(f.Code), "err", aws.ToString(f.Message))
	}
}

// body returns a received message's body: an SNS notification unwrapped
// (unless Raw), base64 decoded when flagged so, as gocloud.dev's SQS
// subscriptions do.
func (b *Bus) body(m types.Message) []byte {
	body := aws.ToString(m.Body)
	_, encoded := m.MessageAttributes[base64EncodedKey]
	if !b.opts.Raw && len(m.MessageAttributes) == 0 {
		var sns struct {
			Type              string
			MessageId         string
			TopicArn          string
			Timestamp         string
			Message           string
			MessageAttributes map[string]struct{ Value string }
		}
		if json.Unmarshal([]byte(body), &sns) == nil &&
			sns.Type == "Notification" && sns.MessageId != "" && sns.Timestamp != "" && sns.TopicArn != "" &&
			(b.opts.SNSTopicARN == "" || sns.TopicArn == b.opts.SNSTopicARN) {
			body = sns.Message
			_, encoded = sns.MessageAttributes[base64EncodedKey]
		}
	}
	if encoded {
		if d, err := base64.StdEncoding.DecodeString(body); err == nil {
			return d
		}
	}
	return []byte(body)
}

// withSafeBody is passed to every SQS call to work around a race between
// the SDK and net/http that tears down connections. net/http's Transport
// writes a request body straight to the connection, then checks for bytes
// past its ContentLength with io.Copy, which uses the body's WriteTo. The
// SDK closes the request body as soon as the response headers arrive, and
// its closed body's WriteTo reports io.EOF, which io.Copy (unlike with
// Read) passes on as an error. When the server answered before that check
// ran, the Transport takes it for a failed write and closes the
// connection under the response being read: the SDK retries the call, and
// the messages a lost ReceiveMessage response carried stay hidden until
// the queue's visibility timeout. Hiding WriteTo makes the check use Read,
// whose io.EOF is the clean end it is.
func withSafeBody(o *sqs.Options) {
	if _, ok := o.HTTPClient.(safeBodyClient); !ok && o.HTTPClient != nil {
		o.HTTPClient = safeBodyClient{o.HTTPClient}
	}
}

type safeBodyClient struct{ sqs.HTTPClient }

func (c safeBodyClient) Do(r *http.Request) (*http.Response, error) {
	if _, ok := r.Body.(io.WriterTo); ok && r.Body != http.NoBody {
		r.Body = readCloser{r.Body}
	}
	return c.HTTPClient.Do(r)
}

// readCloser hides its ReadCloser's other methods.
type readCloser struct{ io.ReadCloser }

// Close stops the subscriptions still running (stop them first to be
// sure of the last delivery) and makes Publish and Subscribe fail. It
// holds nothing else: a Publish has finished sending when it returns.
func (b *Bus) Close() error {
	b.mu.Lock()
	b.closed = true
	subs := make([]*subscription, 0, len(b.subs))
	for s := range b.subs {
		subs = append(subs, s)
	}
	clear(b.subs)
	b.mu.Unlock()
	for _, s := range subs {
		s.stop()
	}
	return nil
}

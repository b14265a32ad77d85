// Package nats is a core NATS notification bus (fan-out: every subscriber
// receives every hint), registered as "nats" with notify.Open:
//
//	nats://[USER:PASSWORD@]HOST:PORT?subject=cairn.hints
//
// Query parameters:
//
//   - subject: the subject hints are published on [cairn.hints]
//   - name: the connection name shown by the server [cairn]
//   - creds: a credentials (.creds) file for NATS JWT authentication
//   - servers: more server URLs, comma-separated, for a cluster
//   - connect_timeout: time.ParseDuration form [2s]
//   - reconnect_wait: pause between reconnect attempts [250ms]
//   - max_message_bytes: split batches above this size
//     [notify.DefaultMaxMessageBytes, and never above the server's max_payload]
//
// Each Publish call sends one message (more for a batch above the size
// limit) holding a JSON batch of hints. Core NATS is at-most-once: a
// subscriber that is disconnected when a hint is published never sees it,
// which the engine's fallback scan covers.
//
// The connection reconnects forever after a disconnect and resubscribes by
// itself. While it is disconnected, Publish fails at once (no reconnect
// buffer: the engine then serves its own claims from the hints, and hints
// buffered for minutes would only be stale). Open fails when no server
// answers within connect_timeout.
package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/cairn-dev/cairn/notify"
	"github.com/cairn-dev/cairn/notify/internal/busurl"
)

// DefaultSubject is the subject used when none is given.
const DefaultSubject = "cairn.hints"

func init() {
	notify.Register("nats", func(ctx context.Context, u *url.URL) (notify.Bus, error) { return OpenURL(ctx, u) })
}

// Options tune a Bus. Zero fields take the defaults in brackets.
type Options struct {
	// Subject hints are published and received on [DefaultSubject].
	Subject string
	// MaxMessageBytes caps one message [notify.DefaultMaxMessageBytes];
	// the server's max_payload caps it too.
	MaxMessageBytes int
	// Logger receives connection events and undecodable messages
	// [slog.Default()].
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Subject == "" {
		o.Subject = DefaultSubject
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = notify.DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Bus is a NATS notification bus.
type Bus struct {
	nc    *natsgo.Conn
	opts  Options
	owned bool
}

// New returns a bus on an existing connection, which the caller keeps
// owning (Close does not close it). For the reconnect behavior described
// in the package documentation, connect with ConnectOptions.
func New(nc *natsgo.Conn, opts Options) *Bus {
	opts.setDefaults()
	return &Bus{nc: nc, opts: opts}
}

// ConnectOptions are the nats.go options Connect and OpenURL use, with
// the given connection name, logging to log.
func ConnectOptions(name string, log *slog.Logger) []natsgo.Option {
	if log == nil {
		log = slog.Default()
	}
	return []natsgo.Option{
		natsgo.Name(name),
		natsgo.Timeout(2 * time.Second),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(250 * time.Millisecond),
		natsgo.ReconnectJitter(100*time.Millisecond, time.Second),
		natsgo.ReconnectBufSize(-1), // fail Publish while disconnected
		natsgo.PingInterval(20 * time.Second),
		natsgo.MaxPingsOutstanding(3),
		natsgo.DisconnectErrHandler(func(nc *natsgo.Conn, err error) {
			if err != nil {
				log.Warn("nats: disconnected; reconnecting", "err", err)
			}
		}),
		natsgo.ReconnectHandler(func(nc *natsgo.Conn) {
			log.Info("nats: reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		natsgo.ErrorHandler(func(nc *natsgo.Conn, sub *natsgo.Subscription, err error) {
			// A slow consumer loses hints, which the fallback scan covers.
			log.Warn("nats: asynchronous error", "err", err)
		}),
	}
}

// Connect connects to servers (a comma-separated URL list) and returns a
// bus owning the connection.
func Connect(servers string, opts Options, extra ...natsgo.Option) (*Bus, error) {
	opts.setDefaults()
	nc, err := natsgo.Connect(servers, append(ConnectOptions("cairn", opts.Logger), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect: %w", err)
	}
	return &Bus{nc: nc, opts: opts, owned: true}, nil
}

// OpenURL opens a bus from a URL as described in the package
// documentation.
func OpenURL(ctx context.Context, u *url.URL) (*Bus, error) {
	var opts Options
	q := u.Query()
	var extra []natsgo.Option
	servers := []string{(&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}).String()}
	// option and timing set a parameter that gives the connection an
	// option, of the value or of the duration it reads as.
	option := func(o func(string) natsgo.Option) func(string) error {
		return func(v string) error { extra = append(extra, o(v)); return nil }
	}
	timing := func(o func(time.Duration) natsgo.Option) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err == nil {
				extra = append(extra, o(d))
			}
			return err
		}
	}
	err := busurl.Params{
		"subject": busurl.String(&opts.Subject),
		"name":    option(natsgo.Name),
		"creds":   option(func(v string) natsgo.Option { return natsgo.UserCredentials(v) }),
		"servers": func(v string) error {
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					servers = append(servers, s)
				}
			}
			return nil
		},
		"connect_timeout":   timing(natsgo.Timeout),
		"reconnect_wait":    timing(natsgo.ReconnectWait),
		"max_message_bytes": busurl.Int(&opts.MaxMessageBytes),
	}.Set("nats", q)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, errors.New("nats: URL has no host")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Connect(strings.Join(servers, ","), opts, extra...)
}

// Conn returns the bus's connection.
func (b *Bus) Conn() *natsgo.Conn { return b.nc }

// Subject returns the subject hints travel on.
func (b *Bus) Subject() string { return b.opts.Subject }

// Publish sends hints as one JSON batch message (several above the size
// limit). It fails at once while the connection is down.
func (b *Bus) Publish(ctx context.Context, hints []notify.Hint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(hints) == 0 {
		return nil
	}
	limit := b.opts.MaxMessageBytes
	if mp := int(b.nc.MaxPayload()); mp > 0 && mp < limit {
		limit = mp
	}
	msgs, encErr := notify.Encode(hints, limit)
	if st := b.nc.Status(); st != natsgo.CONNECTED {
		return fmt.Errorf("nats: connection %s: %d hints not published", st, len(hints))
	}
	for _, m := range msgs {
		if err := b.nc.Publish(b.opts.Subject, m); err != nil {
			return fmt.Errorf("nats: publish: %w", err)
		}
	}
	return encErr
}

// Subscribe delivers every hint received on the subject to fn until stop.
func (b *Bus) Subscribe(fn func(notify.Hint)) (stop func(), err error) {
	sink := notify.NewSink(fn)
	sub, err := b.nc.Subscribe(b.opts.Subject, func(m *natsgo.Msg) {
		sink.DeliverMessage(m.Data, b.opts.Logger)
	})
	if err != nil {
		return nil, fmt.Errorf("nats: subscribe %s: %w", b.opts.Subject, err)
	}
	// Hints are small and bursty; allow a deep backlog before the client
	// drops messages as a slow consumer.
	_ = sub.SetPendingLimits(1<<20, 256<<20)
	// Make sure the server knows the subscription before returning, so a
	// hint published right after Subscribe is received.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.nc.FlushWithContext(ctx); err != nil && b.nc.IsConnected() {
		b.opts.Logger.Warn("nats: subscription not confirmed by the server", "err", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := sub.Unsubscribe(); err != nil && !errors.Is(err, natsgo.ErrConnectionClosed) && !errors.Is(err, natsgo.ErrBadSubscription) {
				b.opts.Logger.Warn("nats: unsubscribe", "err", err)
			}
			sink.Close()
		})
	}, nil
}

// Close closes the connection if the bus owns it.
func (b *Bus) Close() error {
	if b.owned {
		b.nc.Close()
	}
	return nil
}

// Command goaws runs the goaws SQS emulator (github.com/Admiral-Piett/goaws
// v0.4.5) on a loopback address for the notify/sqs tests. goaws's own
// command binds 0.0.0.0; this one binds -addr (127.0.0.1 by default), and
// creates the queues named by -queues before serving, so no queue is
// created while requests run (goaws reads its queue map without a lock).
// It prints "listening http://HOST:PORT" once ready.
//
// This is a module of its own so that goaws and its dependencies stay out
// of cairn's go.mod; the tests build it with `go build`.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Admiral-Piett/goaws/app"
	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/router"
	log "github.com/sirupsen/logrus"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	account := flag.String("account", "100010001000", "account id in queue URLs")
	queues := flag.String("queues", "", "comma-separated queues to create")
	visibility := flag.Int("visibility", 30, "default visibility timeout, seconds")
	debug := flag.Bool("debug", false, "log requests to stderr")
	flag.Parse()

	log.SetOutput(io.Discard)
	if *debug {
		log.SetOutput(os.Stderr)
		log.SetLevel(log.DebugLevel)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "goaws:", err)
		os.Exit(1)
	}
	host, port, _ := net.SplitHostPort(l.Addr().String())
	app.CurrentEnvironment = app.Environment{
		Host:      host,
		Port:      port,
		AccountID: *account,
		QueueAttributeDefaults: app.EnvQueueAttributes{
			VisibilityTimeout:  *visibility,
			MaximumMessageSize: 262144,
		},
	}
	h := router.New()
	for _, q := range strings.Split(*queues, ",") {
		if q = strings.TrimSpace(q); q == "" {
			continue
		}
		form := url.Values{"Action": {"CreateQueue"}, "QueueName": {q}}
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			fmt.Fprintf(os.Stderr, "goaws: create queue %s: %d %s\n", q, rec.Code, rec.Body)
			os.Exit(1)
		}
	}
	go gosqs.PeriodicTasks(time.Second, make(chan struct{}))
	fmt.Printf("listening http://%s\n", l.Addr())
	if err := http.Serve(l, h); err != nil {
		fmt.Fprintln(os.Stderr, "goaws:", err)
		os.Exit(1)
	}
}

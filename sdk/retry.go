package sdk

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// retryDoer sends requests through next and sends again, after a pause,
// those that certainly changed nothing: answered 503 or 429 (the API's
// promise: nothing was applied; a 503 comes with Retry-After when the store
// is busy or unreachable), or refused before any byte was sent (the
// connection could not be made). A GET changes nothing whatever its
// outcome, so it is also sent again after a server error (500, 502, 504:
// a store read that failed) or a connection lost mid-request. Anything
// else — an answer, or a write whose connection was lost after the
// request went out — is returned as is: only the caller knows whether it
// is safe to repeat.
type retryDoer struct {
	next     *http.Client
	attempts int           // sends in all [4]
	maxWait  time.Duration // longest pause between sends [5s]
}

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	for n := 1; ; n++ {
		resp, err := d.next.Do(req)
		wait, again := d.retry(n, req.Method == http.MethodGet || req.Method == http.MethodHead, resp, err)
		if !again || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, req.Context().Err()
		case <-t.C:
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
	}
}

// retry says whether the n-th send's outcome may be sent again, and after
// how long; safe is true for a GET or HEAD.
func (d *retryDoer) retry(n int, safe bool, resp *http.Response, err error) (time.Duration, bool) {
	attempts, maxWait := d.attempts, d.maxWait
	if attempts == 0 {
		attempts = 4
	}
	if maxWait == 0 {
		maxWait = 5 * time.Second
	}
	if n >= attempts {
		return 0, false
	}
	backoff := time.Duration(100<<(n-1)) * time.Millisecond
	backoff = backoff/2 + rand.N(backoff/2+1)
	switch {
	case err != nil:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return min(backoff, maxWait), true // nothing was sent
		}
		if safe && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return min(backoff, maxWait), true
		}
		return 0, false
	case safe && (resp.StatusCode == http.StatusInternalServerError || resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusGatewayTimeout):
		return min(backoff, maxWait), true
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
		if ms, err := strconv.Atoi(resp.Header.Get("Retry-After-Ms")); err == nil && ms >= 0 {
			return min(time.Duration(ms)*time.Millisecond, maxWait), true // finer than Retry-After
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			return min(max(time.Duration(s)*time.Second, backoff), maxWait), true
		}
		return min(backoff, maxWait), true
	}
	return 0, false
}

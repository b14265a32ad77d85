package chaos

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Call is one worker-protocol call as a worker saw it: its invocation and
// its answer, with wall-clock times (every process of a chaos round runs
// on one machine, so their clocks agree). The history checker reads them.
//
// A call is recorded twice: a Pending line when it is invoked, and the
// complete line (same Worker and Seq) when its answer arrives. A worker
// killed while a call is in flight leaves only the Pending line; the
// checker takes that call as invoked and unanswered (it may have been
// applied at any later time), as Jepsen takes an indeterminate operation.
// Without it, a complete in flight when its worker was killed vanished
// from the history while the engine applied it — and the worker's own
// earlier-answered heartbeat that said already_applied looked impossible
// (the non-linearizable history of seed 447662497).
type Call struct {
	Worker string `json:"worker"`
	// Seq numbers the worker process's calls (from 1); 0 in histories
	// recorded before invocations were logged.
	Seq int64 `json:"seq,omitempty"`
	// Pending marks the invocation line of a call.
	Pending bool `json:"pending,omitempty"`
	// Path is the request path below /v1/api (/steps/claim, /steps/{lease}/complete, …).
	Path string          `json:"path"`
	Req  json.RawMessage `json:"req,omitempty"`
	// Status is the HTTP status; 0 when no answer arrived (the call may or
	// may not have been applied).
	Status int             `json:"status"`
	Resp   json.RawMessage `json:"resp,omitempty"`
	Start  int64           `json:"start"` // unix ns at invocation
	End    int64           `json:"end"`   // unix ns at answer (or failure)
}

// recorder is an http.RoundTripper that appends every /steps/ call to a
// history file.
type recorder struct {
	next   http.RoundTripper
	worker string
	mu     sync.Mutex
	f      *os.File
	seq    atomic.Int64
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	i := strings.Index(req.URL.Path, "/steps/")
	if i < 0 || req.Method != http.MethodPost {
		return r.next.RoundTrip(req)
	}
	c := Call{Worker: r.worker, Path: req.URL.Path[i:], Seq: r.seq.Add(1)}
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			body, _ := io.ReadAll(b)
			b.Close()
			if json.Valid(body) {
				c.Req = body
			}
		}
	}
	c.Start = time.Now().UnixNano()
	// The invocation is on file before the request leaves: a kill -9
	// before the answer leaves this line alone.
	inv := c
	inv.Pending = true
	r.write(inv)
	res, err := r.next.RoundTrip(req)
	if err != nil {
		c.End = time.Now().UnixNano()
		r.write(c)
		return res, err
	}
	body, rerr := io.ReadAll(res.Body)
	res.Body.Close()
	c.End = time.Now().UnixNano()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if rerr == nil {
		c.Status = res.StatusCode
		if json.Valid(body) {
			c.Resp = body
		}
	}
	r.write(c)
	return res, rerr
}

func (r *recorder) write(c Call) {
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	b = append(b, '\n')
	r.mu.Lock()
	r.f.Write(b)
	r.mu.Unlock()
}

package chaos

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Call is one worker-protocol call as a worker saw it: its invocation and
// its answer, with wall-clock times (every process of a chaos round runs
// on one machine, so their clocks agree). The history checker reads them.
type Call struct {
	Worker string `json:"worker"`
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
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	i := strings.Index(req.URL.Path, "/steps/")
	if i < 0 || req.Method != http.MethodPost {
		return r.next.RoundTrip(req)
	}
	c := Call{Worker: r.worker, Path: req.URL.Path[i:]}
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

package chaos

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func leaseID(run, step string, n int, worker string) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"r":%q,"s":%q,"n":%d,"w":%q,"t":1,"k":"x"}`, run, step, n, worker))
}

// call builds a recorded call on lease l at [start, end] answering status
// with reason (409) or nothing.
func call(worker, path string, status int, reason string, start, end int64) Call {
	c := Call{Worker: worker, Path: path, Status: status, Start: start, End: end}
	if reason != "" {
		c.Resp = fmt.Appendf(nil, `{"status":409,"reason":%q}`, reason)
	}
	return c
}

func claimCall(worker, lease string, start, end int64) Call {
	return Call{Worker: worker, Path: "/steps/claim", Status: 200, Start: start, End: end,
		Resp: fmt.Appendf(nil, `{"leases":[{"id":%q}]}`, lease)}
}

// modelCase is a history and whether the lease model allows it.
type modelCase struct {
	name  string
	calls []Call
	ok    bool
}

// TestLeaseModel: the checker accepts histories the lease protocol
// allows and rejects each kind of violation it exists to find.
func TestLeaseModel(t *testing.T) {
	a := leaseID("r1", "s", 1, "w1")
	b := leaseID("r1", "s", 1, "w2") // a second lease of the same attempt
	a2 := leaseID("r1", "s", 2, "w2")
	cases := []modelCase{
		{"claim, started, heartbeat, complete", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/started", 200, "", 20, 30),
			call("w1", "/steps/"+a+"/heartbeat", 200, "", 40, 50), call("w1", "/steps/"+a+"/complete", 200, "", 60, 70),
		}, true},
		{"lost answer then already_applied", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/complete", 0, "", 20, 30),
			call("w1", "/steps/"+a+"/complete", 409, "already_applied", 40, 50),
		}, true},
		{"expired and fenced; the next attempt completes", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/heartbeat", 409, "fenced", 20, 30),
			call("w1", "/steps/"+a+"/complete", 409, "fenced", 40, 50),
			claimCall("w2", a2, 35, 45), call("w2", "/steps/"+a2+"/complete", 200, "", 60, 70),
		}, true},
		{"complete concurrent with a fence", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/complete", 200, "", 20, 60),
			call("w1", "/steps/"+a+"/heartbeat", 409, "already_applied", 30, 70),
		}, true},
		{"two holders of one attempt", []Call{
			claimCall("w1", a, 0, 10), claimCall("w2", b, 20, 30),
		}, false},
		{"complete applied after the fence was seen", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/heartbeat", 409, "fenced", 20, 30),
			call("w1", "/steps/"+a+"/complete", 200, "", 40, 50),
		}, false},
		{"already_applied with no applied end", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/complete", 409, "already_applied", 20, 30),
		}, false},
		{"applied twice", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/complete", 200, "", 20, 30),
			call("w1", "/steps/"+a+"/fail", 200, "", 40, 50),
		}, false},
		{"heartbeat accepted after the fence", []Call{
			claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/started", 409, "run_terminal", 20, 30),
			call("w1", "/steps/"+a+"/heartbeat", 200, "", 40, 50),
		}, false},
	}
	// Seed 447662497: a worker killed while its complete was in flight
	// (the engine applied it; the answer never came) had asked for a
	// heartbeat after sending the complete, answered already_applied.
	// Recorded with its invocation line the complete may have been
	// applied any time after it was sent: linearizable. Without the
	// invocation line (histories before it was recorded) the same calls
	// read as already_applied with no applied end.
	inflight := []Call{
		claimCall("w1", a, 0, 10), call("w1", "/steps/"+a+"/started", 200, "", 20, 30),
		{Worker: "w1", Seq: 7, Pending: true, Path: "/steps/" + a + "/complete", Start: 40},
		call("w1", "/steps/"+a+"/heartbeat", 409, "already_applied", 50, 60),
	}
	cases = append(cases,
		modelCase{"complete in flight when its worker was killed, then already_applied", inflight, true},
		modelCase{"the same without the complete's invocation", []Call{inflight[0], inflight[1], inflight[3]}, false},
		modelCase{"an answered call's invocation line is not a second call", []Call{
			// Read as a second, unanswered complete, the invocation line
			// would explain the already_applied (applied before the
			// fenced refusal); resolved, the one complete was refused.
			claimCall("w1", a, 0, 10),
			{Worker: "w1", Seq: 3, Pending: true, Path: "/steps/" + a + "/complete", Start: 20},
			{Worker: "w1", Seq: 3, Path: "/steps/" + a + "/complete", Status: 409, Resp: []byte(`{"reason":"fenced"}`), Start: 20, End: 30},
			call("w1", "/steps/"+a+"/heartbeat", 409, "already_applied", 40, 50),
		}, false},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _, n := CheckHistory(c.calls, 10*time.Second)
			if n == 0 {
				t.Fatal("no operations decoded")
			}
			if got := res == porcupine.Ok; got != c.ok {
				t.Fatalf("checker said %s, want linearizable=%v", res, c.ok)
			}
		})
	}
}

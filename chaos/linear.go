package chaos

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The lease model (docs/ARCHITECTURE.md, "Leases") as porcupine checks it:
// one history per attempt (run, step, attempt number), whose operations
// are the worker calls on that attempt's lease. An attempt is
//
//	none    → claim → held
//	held    → complete/fail applied → applied
//	held    → (reaper expiry, a later attempt, the run's end) → fenced
//
// and the calls must be explained by one order of those transitions that
// respects real time:
//   - one holder per attempt: every call on an attempt names the same
//     lease (a second lease id for one attempt is two holders);
//   - a complete or fail is applied (200) only while held: never after the
//     lease was fenced or its end applied;
//   - already_applied only for the lease's own applied end;
//   - a heartbeat or started is accepted only while held.
//
// The fence is the engine's internal transition (reaper expiry, a cancel):
// workers do not see it happen, so the model may take it at any point
// before an operation, and a refusal (fenced, run_terminal) pins it. A
// call with no answer (the connection dropped, a 5xx) may or may not
// have been applied.

// LeaseOp is one worker call on one attempt's lease.
type LeaseOp struct {
	// Op is claim, started, heartbeat, complete or fail.
	Op     string
	Lease  string
	Worker string
}

// LeaseResult is the answer: ok, a refusal reason, "unknown" (no answer
// or a server error: the call may have been applied) or "other" (a
// client error that changes nothing).
type LeaseResult struct {
	Result string
}

// Answer kinds besides refusal reasons.
const (
	resOK      = "ok"
	resUnknown = "unknown"
	resOther   = "other"
)

type phase uint8

const (
	phNone phase = iota
	phHeld
	phApplied
	phFenced
)

func (p phase) String() string { return [...]string{"none", "held", "applied", "fenced"}[p] }

type leaseState struct {
	holder string
	phase  phase
}

func leaseStep(s0 any, in any, out any) []any {
	st := s0.(leaseState)
	op, res := in.(LeaseOp), out.(LeaseResult).Result
	if op.Op == "claim" {
		switch {
		case st.holder == "":
			return []any{leaseState{op.Lease, phHeld}}
		case st.holder == op.Lease:
			return []any{st}
		default:
			return nil // a second holder of one attempt
		}
	}
	if st.holder != "" && st.holder != op.Lease {
		return nil
	}
	if st.holder == "" { // its claim's answer was lost: the lease was held
		st = leaseState{op.Lease, phHeld}
	}
	pre := []leaseState{st}
	if st.phase == phHeld { // the engine may have fenced it since
		pre = append(pre, leaseState{st.holder, phFenced})
	}
	var next []any
	for _, p := range pre {
		for _, ph := range leaseNext(op.Op, p.phase, res) {
			next = append(next, leaseState{p.holder, ph})
		}
	}
	return next
}

// leaseNext is the phases an attempt in phase p can be in after op
// answered res; none means the answer is impossible from p.
func leaseNext(op string, p phase, res string) []phase {
	end := op == "complete" || op == "fail"
	switch res {
	case resUnknown, resOther:
		if end && res == resUnknown && p == phHeld {
			return []phase{phHeld, phApplied}
		}
		return []phase{p}
	case resOK:
		if p != phHeld {
			return nil
		}
		if end {
			return []phase{phApplied}
		}
		return []phase{phHeld}
	case "already_applied":
		if p == phApplied {
			return []phase{phApplied}
		}
		return nil
	case "fenced", "run_terminal":
		if p == phFenced || p == phApplied {
			return []phase{p}
		}
		return nil
	default: // not_started, too large: nothing changes
		return []phase{p}
	}
}

// LeaseModel is the porcupine model of one attempt's lease.
var LeaseModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range h {
			k := o.Metadata.(string)
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], o)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init:  func() []any { return []any{leaseState{}} },
	Step:  leaseStep,
	Equal: func(a, b any) bool { return a.(leaseState) == b.(leaseState) },
	DescribeOperation: func(in, out any) string {
		op := in.(LeaseOp)
		return fmt.Sprintf("%s by %s → %s", op.Op, op.Worker, out.(LeaseResult).Result)
	},
	DescribeState: func(s any) string { return s.(leaseState).phase.String() },
}

// leaseKey decodes a lease id (base64url JSON naming run, step and
// attempt) into the attempt it leases.
func leaseKey(id string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		return "", false
	}
	var t struct {
		R string `json:"r"`
		S string `json:"s"`
		N int    `json:"n"`
	}
	if json.Unmarshal(b, &t) != nil || t.R == "" || t.S == "" || t.N < 1 {
		return "", false
	}
	return fmt.Sprintf("%s/%s/%d", t.R, t.S, t.N), true
}

// Operations turns recorded worker calls into porcupine operations, one
// per lease touched (a batched heartbeat is one per lease). A call with
// no answer gets a return time of +∞: it may take effect at any later
// point.
func Operations(calls []Call) []porcupine.Operation {
	b := &opsBuilder{clients: map[string]int{}}
	for _, c := range resolvePending(calls) {
		switch c.Path {
		case "/steps/claim":
			b.claim(c)
		case "/steps/heartbeat":
			b.heartbeatMany(c)
		default:
			b.leaseCall(c)
		}
	}
	return b.ops
}

// opsBuilder collects the operations of recorded calls, numbering the
// workers as porcupine clients in the order they first appear.
type opsBuilder struct {
	clients map[string]int
	ops     []porcupine.Operation
}

func (b *opsBuilder) client(w string) int {
	if n, ok := b.clients[w]; ok {
		return n
	}
	b.clients[w] = len(b.clients)
	return b.clients[w]
}

// add adds the operation op on lease by call c, with its result; a lease
// id that does not decode is skipped.
func (b *opsBuilder) add(c Call, op, lease, result string) {
	key, ok := leaseKey(lease)
	if !ok {
		return
	}
	ret := c.End
	if result == resUnknown {
		ret = math.MaxInt64
	}
	b.ops = append(b.ops, porcupine.Operation{ClientId: b.client(c.Worker), Call: c.Start, Return: ret,
		Input: LeaseOp{Op: op, Lease: lease, Worker: c.Worker}, Output: LeaseResult{Result: result}, Metadata: key})
}

// claim adds a claim for each lease an answered claim granted.
func (b *opsBuilder) claim(c Call) {
	if c.Status != 200 {
		return // a claim with no answer may have leased: later calls show it
	}
	var r struct {
		Leases []struct {
			ID string `json:"id"`
		} `json:"leases"`
	}
	if json.Unmarshal(c.Resp, &r) == nil {
		for _, l := range r.Leases {
			b.add(c, "claim", l.ID, resOK)
		}
	}
}

// heartbeatMany adds a heartbeat for each lease of a batched heartbeat:
// with its own result when the call was answered, else with the call's.
func (b *opsBuilder) heartbeatMany(c Call) {
	var req struct {
		Leases []string `json:"leases"`
	}
	json.Unmarshal(c.Req, &req)
	var r struct {
		Results []struct {
			Lease     string  `json:"lease"`
			ExpiresAt *string `json:"expires_at"`
			Reason    string  `json:"reason"`
		} `json:"results"`
	}
	if c.Status != 200 || json.Unmarshal(c.Resp, &r) != nil {
		for _, l := range req.Leases {
			b.add(c, "heartbeat", l, classify(c))
		}
		return
	}
	for _, res := range r.Results {
		switch {
		case res.ExpiresAt != nil:
			b.add(c, "heartbeat", res.Lease, resOK)
		case res.Reason != "":
			b.add(c, "heartbeat", res.Lease, res.Reason)
		default:
			b.add(c, "heartbeat", res.Lease, resUnknown)
		}
	}
}

// leaseCall adds the operation of a call on one lease
// (/steps/{lease}/started, heartbeat, complete or fail).
func (b *opsBuilder) leaseCall(c Call) {
	rest := strings.TrimPrefix(c.Path, "/steps/")
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return
	}
	lease, op := rest[:i], rest[i+1:]
	switch op {
	case "started", "heartbeat", "complete", "fail":
		b.add(c, op, lease, classify(c))
	}
}

// resolvePending drops the invocation line of every call whose answer was
// recorded and turns each other one (its worker was killed before the
// answer came) into an unanswered call: status 0, which the model reads
// as "may have been applied at any later time".
func resolvePending(calls []Call) []Call {
	type id struct {
		w string
		n int64
	}
	answered := map[id]bool{}
	for _, c := range calls {
		if !c.Pending && c.Seq != 0 {
			answered[id{c.Worker, c.Seq}] = true
		}
	}
	out := make([]Call, 0, len(calls))
	for _, c := range calls {
		if c.Pending {
			if answered[id{c.Worker, c.Seq}] {
				continue
			}
			c.Pending, c.Status, c.Resp, c.End = false, 0, nil, math.MaxInt64
		}
		out = append(out, c)
	}
	return out
}

// classify maps a single call's answer to a result.
func classify(c Call) string {
	switch {
	case c.Status == 0 || c.Status >= 500:
		return resUnknown
	case c.Status < 300:
		return resOK
	case c.Status == 409:
		var p struct {
			Reason string `json:"reason"`
		}
		if json.Unmarshal(c.Resp, &p) == nil && p.Reason != "" {
			return p.Reason
		}
		return resOther
	default:
		return resOther
	}
}

// CheckHistory checks recorded worker calls against the lease model.
func CheckHistory(calls []Call, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo, int) {
	ops := Operations(calls)
	res, info := porcupine.CheckOperationsVerbose(LeaseModel.ToModel(), ops, timeout)
	return res, info, len(ops)
}

// checkHistory checks the round's recorded worker calls.
func (r *round) checkHistory() {
	calls, err := readLines[Call](r.hist)
	if err != nil {
		r.rep.fail("history: %v", err)
	}
	for _, c := range resolvePending(calls) {
		r.rep.Calls++
		if c.Seq != 0 && c.End == math.MaxInt64 {
			r.rep.Unanswered++
		}
	}
	res, info, n := CheckHistory(calls, 5*time.Minute)
	r.rep.LeaseOps = n
	r.rep.Linearizable = res == porcupine.Ok
	switch res {
	case porcupine.Illegal:
		path := r.cfg.Dir + "/history.html"
		porcupine.VisualizePath(LeaseModel.ToModel(), info, path)
		r.rep.fail("the worker-protocol history is not linearizable against the lease model (%d operations; see %s); rejected attempts:\n  %s",
			n, path, strings.Join(IllegalAttempts(calls, 3), "\n  "))
	case porcupine.Unknown:
		r.logf("chaos: the history check timed out (%d operations)", n)
	}
}

// IllegalAttempts checks each attempt's operations on its own and
// describes the ones the lease model rejects (at most max), one operation
// a line with times relative to the attempt's first call: what a failed
// history check prints, so the failure explains itself without the
// visualisation.
func IllegalAttempts(calls []Call, max int) []string {
	ops := Operations(calls)
	model := LeaseModel.ToModel()
	var out []string
	for _, part := range model.Partition(ops) {
		if porcupine.CheckOperations(model, part) {
			continue
		}
		out = append(out, describeOps(part))
		if len(out) >= max {
			break
		}
	}
	return out
}

func describeOps(ops []porcupine.Operation) string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	t0 := sorted[0].Call
	ms := func(t int64) string {
		if t == math.MaxInt64 {
			return "∞"
		}
		return fmt.Sprintf("%.1fms", float64(t-t0)/1e6)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %s:", sorted[0].Metadata)
	for _, o := range sorted {
		op := o.Input.(LeaseOp)
		fmt.Fprintf(&b, "\n    [%s, %s] %s by %s (lease …%s) → %s", ms(o.Call), ms(o.Return), op.Op, op.Worker, tail(op.Lease, 8), o.Output.(LeaseResult).Result)
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

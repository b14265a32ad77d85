package chaos

// checkHistory checks the recorded worker-protocol calls (filled in by the
// history checker).
func (r *round) checkHistory() {
	calls, err := readLines[Call](r.hist)
	if err != nil {
		r.rep.fail("history: %v", err)
	}
	r.rep.Calls = len(calls)
}

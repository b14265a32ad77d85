package engine

import "sync/atomic"

// reapParallel bounds how many due runs one reaper pass visits at once.
// Each visit is a handful of sequential store requests (read the run,
// fire its timers, check its leases, re-arm, drop the spent timers) on
// its own run, so visits do not contend with each other; visiting them
// one after another made a pass over a few hundred due runs take minutes
// on a slow or throttling store (issue #15: a chaos round on MinIO saw a
// 102-second pass over 330 runs, and sleeps that fired minutes late).
const reapParallel = 8

// Add sums o's counters into s.
func (s *ReapStats) Add(o ReapStats) {
	s.TimersDue += o.TimersDue
	s.RunsVisited += o.RunsVisited
	s.LeasesLost += o.LeasesLost
	s.TimedOut += o.TimedOut
	s.Announced += o.Announced
	s.TimersFired += o.TimersFired
	s.Rearmed += o.Rearmed
	s.Errors += o.Errors
	s.ListRequests += o.ListRequests
	s.SchedulesFired += o.SchedulesFired
	s.SchedulesSkipped += o.SchedulesSkipped
	s.SchedulesFailed += o.SchedulesFailed
	s.RunsDeleted += o.RunsDeleted
}

// takeDelete reserves one of the pass's RetentionBatch deletions: visits
// run concurrently, so the batch is counted across them, not per visit.
func (s *ReapStats) takeDelete(batch int) bool {
	if s.deletes == nil {
		return s.RunsDeleted < batch
	}
	if s.deletes.Add(1) > int64(batch) {
		s.deletes.Add(-1)
		return false
	}
	return true
}

// deleteBudget is shared by one pass's visits (see takeDelete).
type deleteBudget = atomic.Int64

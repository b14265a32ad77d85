// Package audit is the engine's audit log of run reads: every read of a
// run's contents is durably recorded before it is answered, in one of two
// places (docs/ARCHITECTURE.md, "audit/").
//
//   - An audit object, audit/<date>/<ns>-<rand>: JSON lines, one entry a
//     line. The reads of one instance added while a write of their date is
//     in flight share the next object (engine/internal/group), so N
//     concurrent reads cost one write; alone a read costs the one it did.
//     An object of one entry is the entry's JSON object, nothing more.
//   - The run's own record: a read held until the run ends (the engine's
//     AwaitRun) is registered here (Hold), and the commit that ends the
//     run on this instance copies its entry into the record it writes
//     (Copy), then marks it recorded once the write landed (Landed). The
//     read is answered from that record without a write of its own
//     (Recorded). When the run is deleted, the record's entries are moved
//     to audit objects first (Record), so retention loses none.
package audit

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/engine/internal/group"
	"github.com/cairn-dev/cairn/engine/internal/keys"
	"github.com/cairn-dev/cairn/engine/internal/object"
)

// MaxCopied is the most held reads one record write takes in (Copy): the
// others audit themselves.
const MaxCopied = 16

// Entry is one read: when, by whom (the key's id), which operation, of
// which run (empty in a run's record: the record's run). Its fields are
// in JSON's key order, so an entry encodes as the map the audit log
// wrote before it had entries.
type Entry struct {
	At        time.Time `json:"at"`
	Operation string    `json:"operation"`
	Run       string    `json:"run,omitempty"`
	Who       string    `json:"who"`
	// held is the held read a Copy made this entry for (0: none, or
	// decoded from a stored record): never stored.
	held uint64
}

// Log writes audit objects and keeps the reads held on this instance.
type Log struct {
	store *blob.Bucket
	keys  keys.Layout
	w     group.Writer[[]Entry]

	mu   sync.Mutex
	last uint64
	held map[string]map[uint64]*Reader // by run, by id
}

// Reader is a read held until its run ends (Hold).
type Reader struct {
	run, who, op string
	id           uint64
	rev          int64 // the revision whose write recorded it (0: none yet)
}

// New returns a log writing to store under k; an object write gives up
// after timeout (0: 30 s).
func New(store *blob.Bucket, k keys.Layout, timeout time.Duration) *Log {
	l := &Log{store: store, keys: k, held: map[string]map[uint64]*Reader{}}
	l.w = group.Writer[[]Entry]{Write: l.write, Timeout: timeout}
	return l
}

// Record returns once entries are in audit objects (nil), or the write of
// some failed (its error) or ctx ended first. Entries of one UTC date go
// to objects under that date, together with the other entries of that
// date recorded meanwhile on this instance.
func (l *Log) Record(ctx context.Context, entries ...Entry) error {
	var dates []string
	byDate := map[string][]Entry{}
	for _, e := range entries {
		d := e.At.UTC().Format(time.DateOnly)
		if byDate[d] == nil {
			dates = append(dates, d)
		}
		byDate[d] = append(byDate[d], e)
	}
	for _, d := range dates {
		if err := l.w.Add(ctx, d, byDate[d]); err != nil {
			return err
		}
	}
	return nil
}

// Read records that who read run at at (operation op): Record of one entry.
func (l *Log) Read(ctx context.Context, at time.Time, who, op, run string) error {
	return l.Record(ctx, Entry{At: at, Who: who, Operation: op, Run: run})
}

// write creates one object of a batch's entries, keyed by the first one's
// time and a random suffix.
func (l *Log) write(ctx context.Context, _ string, batch [][]Entry) error {
	var body []byte
	var first time.Time
	for _, es := range batch {
		for _, e := range es {
			if body == nil {
				first = e.At
			} else {
				body = append(body, '\n')
			}
			body = append(body, object.JSON(e)...)
		}
	}
	var r [4]byte
	rand.Read(r[:])
	_, err := l.store.Create(ctx, l.keys.Audit(first, fmt.Sprintf("%x", r)), body)
	return err
}

// Hold registers a read of run by who (operation op) held until the run
// ends. Release it once answered.
func (l *Log) Hold(run, who, op string) *Reader {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last++
	rd := &Reader{run: run, who: who, op: op, id: l.last}
	if l.held[run] == nil {
		l.held[run] = map[uint64]*Reader{}
	}
	l.held[run][rd.id] = rd
	return rd
}

// Release forgets rd: a record written from now on does not take it in.
func (l *Log) Release(rd *Reader) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held[rd.run], rd.id)
	if len(l.held[rd.run]) == 0 {
		delete(l.held, rd.run)
	}
}

// Copy appends to reads, the entries of run's record about to be written,
// an entry at now for each read of run held here that no landed write
// recorded yet, at most MaxCopied, when the record says the run ended
// (else it returns reads). A write that lands is told to Landed; one that
// does not marks nothing (its retry copies again).
func (l *Log) Copy(run string, reads []Entry, now time.Time, ended bool) []Entry {
	if !ended {
		return reads
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, rd := range l.held[run] {
		if rd.rev == 0 && n < MaxCopied {
			reads = append(reads, Entry{At: now, Who: rd.who, Operation: rd.op, held: rd.id})
			n++
		}
	}
	return reads
}

// Landed marks the held reads whose entries Copy put in reads recorded at
// rev, the revision of the write that landed with them.
func (l *Log) Landed(run string, reads []Entry, rev int64) {
	for i := len(reads) - 1; i >= 0 && reads[i].held != 0; i-- {
		l.mu.Lock()
		if rd := l.held[run][reads[i].held]; rd != nil && rd.rev == 0 {
			rd.rev = rev
		}
		l.mu.Unlock()
	}
}

// Recorded reports whether a landed write recorded rd in its run's record
// at rev or before (so a record at rev holds its entry).
func (l *Log) Recorded(rd *Reader, rev int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return rd.rev != 0 && rd.rev <= rev
}

// Held is how many reads are held (a test signal).
func (l *Log) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, rs := range l.held {
		n += len(rs)
	}
	return n
}

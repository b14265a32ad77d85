// Package file is the embedded default blob driver: a directory on a local
// file system, safe to share between several processes on one machine.
//
// Create-only and compare-and-swap writes are truly exclusive across
// processes: a writer takes an exclusive flock(2) on one of 64 lock files
// (chosen by a hash of the key; the files stay open), checks the condition
// against the version stored in the object, writes a temporary file and
// hands it to the bucket's group committer, which makes the contents of
// every write queued meanwhile durable, renames them over their objects
// and makes the renames durable — on Linux with one syncfs(2) per batch
// (commit.go). The writer answers, and releases its lock, only then.
// Readers take no lock: rename is atomic, so a reader sees either the old
// or the new object, never a mix. (gocloud.dev's fileblob checks existence
// and renames without a lock, so two writers can both "win"; this driver
// exists because of that.)
//
// Layout: a key's segments become directories and a file, each segment
// percent-escaped; a directory carries a "~" suffix so that an object "a"
// and an object "a/b" can coexist, as on S3:
//
//	root/runs~/r123~/record     the object "runs/r123/record"
//	root/~locks/07              a lock file
//	root/runs~/~tmp-…           a write in progress (never listed)
//
// Each object file starts with a one-line header naming its version (a
// random 128-bit token), then the content.
//
// A writer killed between creating its temporary file and the rename
// (kill -9, a power cut) leaves the ~tmp- file behind. Every open bucket
// sweeps them: a background pass over the whole tree every TempMaxAge
// removes temporary files older than TempMaxAge (no write takes that
// long; a writer paused past it finds its rename failing and reports the
// write failed, which a caller already handles).
//
// URL form: file:///absolute/path (created if missing). The query
// parameter nosync=true skips fsync, for throwaway test data;
// tmp_max_age=<duration> sets TempMaxAge (0 turns the sweep off).
package file

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/internal/keypage"
)

func init() {
	blob.Register("file", func(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URL must have an empty host (file:///path), got host %q", u.Host)
		}
		opts := Options{}
		for k, v := range u.Query() {
			switch k {
			case "nosync":
				opts.NoSync = v[0] == "true" || v[0] == "1"
			case "tmp_max_age":
				d, err := time.ParseDuration(v[0])
				if err != nil || d < 0 {
					return nil, fmt.Errorf("file URL parameter tmp_max_age=%q: want a duration", v[0])
				}
				opts.TempMaxAge = d
				if d == 0 {
					opts.TempMaxAge = -1
				}
			default:
				return nil, fmt.Errorf("unknown file URL parameter %q (known: nosync, tmp_max_age)", k)
			}
		}
		if u.Path == "" {
			return nil, errors.New("file URL has no path")
		}
		return New(u.Path, opts)
	})
}

// Options configure a directory bucket.
type Options struct {
	// NoSync skips fsync of files and directories after a write. Faster,
	// but a machine crash may lose or tear recent writes. For tests only.
	NoSync bool
	// TempMaxAge is the age past which a leftover temporary file (a write
	// cut off by kill -9) is removed, and the period of the sweep that
	// removes them [DefaultTempMaxAge]. Negative: never sweep.
	TempMaxAge time.Duration
}

// DefaultTempMaxAge is the age past which leftover temporary files are
// swept.
const DefaultTempMaxAge = 10 * time.Minute

// syncs counts the fsync-class system calls the package has made, for
// the benchmarks' fsyncs-per-write figure.
var syncs atomic.Int64

const (
	lockStripes = 64
	locksDir    = "~locks"
	tmpPrefix   = "~tmp-"
	dirSuffix   = "~"
	header      = "cairn-blob v1 "
)

type driver struct {
	root string
	opts Options

	stripes [lockStripes]stripe
	tmpTag  string       // this bucket's part of its temporary file names
	tmpSeq  atomic.Int64 // the next temporary file's number
	gc      committer
	rootDir *os.File // open for syncfs; nil where it is not used

	stop     chan struct{}
	stopOnce sync.Once
	sweeps   sync.WaitGroup
}

// New returns a bucket stored in the directory root, creating it if
// needed.
func New(root string, opts Options) (*blob.Bucket, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, locksDir), 0o755); err != nil {
		return nil, fmt.Errorf("create bucket directory: %w", err)
	}
	if opts.TempMaxAge == 0 {
		opts.TempMaxAge = DefaultTempMaxAge
	}
	d := &driver{root: abs, opts: opts, stop: make(chan struct{})}
	var tag [6]byte
	rand.Read(tag[:])
	d.tmpTag = hex.EncodeToString(tag[:]) + "-"
	if !opts.NoSync && useSyncfs {
		if d.rootDir, err = os.Open(abs); err != nil {
			return nil, err
		}
	}
	if !opts.NoSync {
		d.gc.start(d)
	}
	if opts.TempMaxAge > 0 {
		d.sweeps.Add(1)
		go d.sweepLoop()
	}
	return blob.NewBucket(d), nil
}

// sweepLoop removes stale temporary files now and every TempMaxAge until
// the bucket is closed.
func (d *driver) sweepLoop() {
	defer d.sweeps.Done()
	t := time.NewTicker(d.opts.TempMaxAge)
	defer t.Stop()
	for {
		SweepTemp(d.root, d.opts.TempMaxAge, d.stop)
		select {
		case <-t.C:
		case <-d.stop:
			return
		}
	}
}

// SweepTemp removes the temporary files under root that are older than
// maxAge — writes cut off between create and rename — and returns how
// many it removed. It stops early when stop is closed (nil: never).
func SweepTemp(root string, maxAge time.Duration, stop <-chan struct{}) int {
	n := 0
	cutoff := time.Now().Add(-maxAge)
	filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		select {
		case <-stop:
			return filepath.SkipAll
		default:
		}
		if err != nil {
			if e != nil && e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			if e.Name() == locksDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			return nil
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) && os.Remove(path) == nil {
			n++
		}
		return nil
	})
	return n
}

// escape makes a key segment safe as a file name: "%", "~", "\" and the
// characters Windows refuses are percent-escaped, so no escaped segment
// contains "~" and the suffix and temp names cannot collide with objects.
func escape(seg string) string {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if strings.IndexByte(`%~\:*?"<>|`, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func unescape(name string) (string, bool) {
	s, err := url.PathUnescape(name)
	return s, err == nil
}

// path returns the file that holds key.
func (d *driver) path(key string) string {
	segs := strings.Split(key, "/")
	parts := make([]string, 0, len(segs)+1)
	parts = append(parts, d.root)
	for i, s := range segs {
		if i < len(segs)-1 {
			parts = append(parts, escape(s)+dirSuffix)
		} else {
			parts = append(parts, escape(s))
		}
	}
	return filepath.Join(parts...)
}

// lock takes the key's stripe: an in-process mutex, then an exclusive
// flock(2) on the stripe's lock file for the other processes.
func (d *driver) lock(key string) (unlock func(), err error) {
	h := fnv.New32a()
	h.Write([]byte(key))
	i := h.Sum32() % lockStripes
	s := &d.stripes[i]
	s.mu.Lock()
	if err := s.lock(filepath.Join(d.root, locksDir, fmt.Sprintf("%02d", i))); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lock: %w", err)
	}
	return func() {
		s.unlock()
		s.mu.Unlock()
	}, nil
}

func newVersion() blob.Version {
	var r [16]byte
	rand.Read(r[:])
	return blob.Version(hex.EncodeToString(r[:]))
}

// readFile reads an object file: its version from the header, and
// optionally its content.
func readFile(path string, withData bool) (blob.Version, []byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, nil, mapErr(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, nil, err
	}
	if fi.IsDir() {
		return "", nil, nil, blob.ErrNotFound
	}
	r := bufio.NewReader(f)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, header) {
		return "", nil, nil, fmt.Errorf("%s: not a cairn blob file (bad header)", path)
	}
	v := blob.Version(strings.TrimSuffix(strings.TrimPrefix(line, header), "\n"))
	if !withData {
		return v, nil, sizeInfo{fi, fi.Size() - int64(len(line))}, nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return "", nil, nil, err
	}
	return v, data, sizeInfo{fi, int64(len(data))}, nil
}

// sizeInfo reports the content size, without the header.
type sizeInfo struct {
	fs.FileInfo
	size int64
}

func (s sizeInfo) Size() int64 { return s.size }

func mapErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return blob.ErrNotFound
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %v", blob.ErrInvalidArgument, err)
	}
	return err
}

func (d *driver) Get(ctx context.Context, key string) (*blob.Object, error) {
	v, data, fi, err := readFile(d.path(key), true)
	if err != nil {
		return nil, err
	}
	return &blob.Object{Attributes: blob.Attributes{Key: key, Size: fi.Size(), Version: v, ModTime: fi.ModTime()}, Data: data}, nil
}

func (d *driver) Stat(ctx context.Context, key string) (blob.Attributes, error) {
	v, _, fi, err := readFile(d.path(key), false)
	if err != nil {
		return blob.Attributes{}, err
	}
	return blob.Attributes{Key: key, Size: fi.Size(), Version: v, ModTime: fi.ModTime()}, nil
}

func (d *driver) Put(ctx context.Context, key string, data []byte, opts blob.WriteOptions) (blob.Version, error) {
	path := d.path(key)
	unlock, err := d.lock(key)
	if err != nil {
		return "", err
	}
	defer unlock()
	// The lock may have been waited for: the Bucket checked the context
	// before that wait, not after it.
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if opts.IfNotExist || opts.IfMatch != "" {
		cur, _, _, err := readFile(path, false)
		exists := err == nil
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			return "", err
		}
		switch {
		case opts.IfNotExist && exists:
			return "", blob.ErrPreconditionFailed
		case opts.IfMatch != "" && !exists:
			return "", blob.ErrNotFound
		case opts.IfMatch != "" && cur != opts.IfMatch:
			return "", blob.ErrPreconditionFailed
		}
	}
	v := newVersion()
	var buf bytes.Buffer
	buf.Grow(len(header) + len(v) + 1 + len(data))
	buf.WriteString(header)
	buf.WriteString(string(v))
	buf.WriteByte('\n')
	buf.Write(data)
	// A concurrent Delete of a sibling may remove an empty parent
	// directory between MkdirAll and the write: try again then.
	for attempt := 0; ; attempt++ {
		err = d.writeAtomic(path, buf.Bytes())
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 10 {
			break
		}
	}
	if err != nil {
		return "", mapErr(err)
	}
	return v, nil
}

// writeAtomic writes content to a temporary file beside path and has the
// group committer make it durable and rename it over path. The caller
// holds the key's lock until it returns.
func (d *driver) writeAtomic(path string, content []byte) error {
	dir := filepath.Dir(path)
	f, tmp, err := d.createTemp(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		f, tmp, err = d.createTemp(dir)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if d.opts.NoSync {
		err := f.Close()
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
		}
		return err
	}
	p := &pending{f: f, tmp: tmp, path: path, dir: dir}
	if useSyncfs {
		// syncfs needs no descriptor: close here, in parallel with the
		// other writers, rather than in the batch's leader.
		p.f = nil
		if err := f.Close(); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	return d.commit(p)
}

// createTemp creates a new temporary file in dir, named by the bucket's
// tag and a sequence number (another process's bucket has another tag).
func (d *driver) createTemp(dir string) (*os.File, string, error) {
	for {
		name := filepath.Join(dir, tmpPrefix+d.tmpTag+strconv.FormatInt(d.tmpSeq.Add(1), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
}

func (d *driver) Delete(ctx context.Context, key string) error {
	unlock, err := d.lock(key)
	if err != nil {
		return err
	}
	defer unlock()
	path := d.path(key)
	if fi, err := os.Stat(path); err != nil {
		return mapErr(err)
	} else if fi.IsDir() {
		return blob.ErrNotFound
	}
	if err := os.Remove(path); err != nil {
		return mapErr(err)
	}
	// Remove parent directories left empty; a failure only means one is
	// not empty (or a concurrent writer just filled it).
	for dir := filepath.Dir(path); dir != d.root; dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

func (d *driver) List(ctx context.Context, opts blob.ListOptions) (blob.ListPage, error) {
	// Start the walk at the deepest directory the prefix names entirely.
	dirKey := ""
	if i := strings.LastIndexByte(opts.Prefix, '/'); i >= 0 {
		dirKey = opts.Prefix[:i+1]
	}
	start := d.root
	for _, s := range strings.Split(strings.TrimSuffix(dirKey, "/"), "/") {
		if s != "" {
			start = filepath.Join(start, escape(s)+dirSuffix)
		}
	}
	var keys []string
	var walk func(dir, keyPrefix string) error
	walk = func(dir, keyPrefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // an empty or concurrently removed directory
			}
			return err
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case dir == d.root && name == locksDir, strings.HasPrefix(name, tmpPrefix):
				continue
			case e.IsDir() && strings.HasSuffix(name, dirSuffix):
				seg, ok := unescape(strings.TrimSuffix(name, dirSuffix))
				if !ok {
					continue
				}
				sub := keyPrefix + seg + "/"
				// Descend only where keys under sub can match the prefix.
				if strings.HasPrefix(sub, opts.Prefix) || strings.HasPrefix(opts.Prefix, sub) {
					if err := walk(filepath.Join(dir, name), sub); err != nil {
						return err
					}
				}
			case e.Type().IsRegular():
				seg, ok := unescape(name)
				if !ok {
					continue
				}
				if k := keyPrefix + seg; strings.HasPrefix(k, opts.Prefix) && k > opts.PageToken && k > opts.StartAfter {
					keys = append(keys, k)
				}
			}
		}
		return nil
	}
	if err := walk(start, dirKey); err != nil {
		return blob.ListPage{}, err
	}
	return keypage.Page(keys, opts.PageSize, func(k string) (blob.Attributes, bool, error) {
		v, _, fi, err := readFile(d.path(k), false)
		if errors.Is(err, blob.ErrNotFound) {
			return blob.Attributes{}, false, nil // deleted since the walk
		}
		if err != nil {
			return blob.Attributes{}, false, err
		}
		return blob.Attributes{Key: k, Size: fi.Size(), Version: v, ModTime: fi.ModTime()}, true, nil
	})
}

// As supports *string: the bucket's root directory.
func (d *driver) As(target any) bool {
	if p, ok := target.(*string); ok {
		*p = d.root
		return true
	}
	return false
}

// Close stops the temporary-file sweep and closes the lock files.
func (d *driver) Close() error {
	d.stopOnce.Do(func() {
		close(d.stop)
		d.gc.close()
		for i := range d.stripes {
			s := &d.stripes[i]
			s.mu.Lock()
			s.close()
			s.mu.Unlock()
		}
		if d.rootDir != nil {
			d.rootDir.Close()
		}
	})
	d.sweeps.Wait()
	return nil
}

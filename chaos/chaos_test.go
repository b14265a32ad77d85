package chaos_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/s3"
	"github.com/cairn-dev/cairn/chaos"
	"github.com/cairn-dev/cairn/internal/testinfra"
	"github.com/cairn-dev/cairn/internal/testinfra/testnats"
)

func TestMain(m *testing.M) { testinfra.Main(m) }

// make chaos sets these (or CHAOS_DURATION / CHAOS_SEED); make test runs
// the short default rounds (shortRound of chaos per store, both stores at
// once, one to three minutes with the builds and the checks).
var (
	duration = flag.Duration("chaos.duration", envDuration("CHAOS_DURATION", shortRound), "how long each round kills and pauses processes")
	seed     = flag.Uint64("chaos.seed", envUint("CHAOS_SEED", 0), "schedule seed (0: a new one, printed)")
	keep     = flag.Bool("chaos.keep", os.Getenv("CHAOS_KEEP") != "", "keep the round's directory (logs, execution log, history)")
)

// shortRound is make test's round: long enough for every workload, a few
// kills of every kind and a store restart, short enough for CI.
const shortRound = 12 * time.Second

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envUint(name string, def uint64) uint64 {
	if n, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return n
	}
	return def
}

// build compiles cairn (with the faults:// store) and the chaos worker.
func build(t *testing.T) (cairnBin, workerBin string) {
	dir := t.TempDir()
	cairnBin, workerBin = filepath.Join(dir, "cairn"), filepath.Join(dir, "chaosworker")
	for _, b := range [][]string{
		{"build", "-tags", "cairn_chaos,cairn_aws", "-o", cairnBin, "../cmd/cairn"},
		{"build", "-o", workerBin, "./chaosworker"},
	} {
		cmd := exec.Command("go", b...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %v: %v", b, err)
		}
	}
	return cairnBin, workerBin
}

// buildTS compiles the TypeScript chaos worker (chaos/tsworker) against
// the TypeScript SDK (sdk/ts, compiled here too) with the SDK's locked
// tsc, into a directory of the test's own, and returns node and the
// script. With no node on PATH it returns "" (the rounds run Go workers
// only, logged); with node but without the SDK's node_modules (make
// ts-deps, which make test runs first) it fails.
func buildTS(t *testing.T) (node, script string, _ error) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node is not on PATH: the rounds run without TypeScript workers")
		return "", "", nil
	}
	sdkDir, err := filepath.Abs("../sdk/ts")
	if err != nil {
		return "", "", err
	}
	tsc := filepath.Join(sdkDir, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		return "", "", fmt.Errorf("the TypeScript chaos worker needs sdk/ts/node_modules (run make ts-deps): %w", err)
	}
	src, err := filepath.Abs("tsworker")
	if err != nil {
		return "", "", err
	}
	dir := t.TempDir()
	// The SDK as the package @cairn-dev/cairn, and its one dependency.
	pkg := filepath.Join(dir, "node_modules", "@cairn-dev", "cairn")
	files := map[string]string{
		filepath.Join(dir, "package.json"): `{"type":"module"}`,
		filepath.Join(pkg, "package.json"): `{"name":"@cairn-dev/cairn","type":"module","exports":{".":{"types":"./index.d.ts","import":"./index.js"}}}`,
		filepath.Join(dir, "tsconfig.json"): fmt.Sprintf(`{"compilerOptions":{"target":"ES2022","lib":["ES2022"],"module":"NodeNext","moduleResolution":"NodeNext",
"strict":true,"types":["node"],"typeRoots":[%q],"rootDir":%q,"outDir":%q,"paths":{"@cairn-dev/cairn":[%q]}},"files":[%q]}`,
			filepath.Join(sdkDir, "node_modules", "@types"), src, filepath.Join(dir, "w"), filepath.Join(pkg, "index.d.ts"), filepath.Join(src, "chaosworker.ts")),
	}
	for path, body := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return "", "", err
		}
	}
	if err := os.Symlink(filepath.Join(sdkDir, "node_modules", "openapi-fetch"), filepath.Join(dir, "node_modules", "openapi-fetch")); err != nil {
		return "", "", err
	}
	for _, args := range [][]string{
		{tsc, "-p", filepath.Join(sdkDir, "tsconfig.json"), "--outDir", pkg, "--sourceMap", "false"},
		{tsc, "-p", filepath.Join(dir, "tsconfig.json")},
	} {
		cmd := exec.Command(node, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("tsc %v: %w\n%s", args[1:], err, out)
		}
	}
	return node, filepath.Join(dir, "w", "chaosworker.js"), nil
}

// faults are the store fault rates of every round.
var faults = chaos.Faults{Error: 0.005, Conflict: 0.005, Throttle: 0.005, Lost: 0.005, Latency: 500 * time.Microsecond, Latency99: 20 * time.Millisecond}

// TestChaos runs seeded chaos rounds in parallel — the file store with no
// bus and MinIO (itself killed, paused and restarted) with NATS; with
// -tags chaos also MinIO with no bus — all with injected store faults and
// Go and TypeScript workers, and fails on any check; the seed is printed
// first and in every failure.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos runs processes for tens of seconds; not under -short")
	}
	s := *seed
	if s == 0 {
		s = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	t.Logf("chaos seed %d (replay: make chaos SEED=%d DURATION=%v)", s, s, *duration)
	var node, tsScript string
	var tsErr error
	tsBuilt := make(chan struct{})
	go func() { defer close(tsBuilt); node, tsScript, tsErr = buildTS(t) }()
	cairnBin, workerBin := build(t)
	<-tsBuilt
	if tsErr != nil {
		t.Fatal(tsErr)
	}
	natsURL := testnats.URL(t)

	round := func(t *testing.T, cfg chaos.Config) {
		dir := t.TempDir()
		if *keep {
			var err error
			if dir, err = os.MkdirTemp("", "cairn-chaos-"); err != nil {
				t.Fatal(err)
			}
			t.Logf("round directory: %s", dir)
		}
		cfg.Seed, cfg.Duration, cfg.Dir = s, *duration, dir
		cfg.CairnBin, cfg.WorkerBin = cairnBin, workerBin
		cfg.APIs, cfg.Workers = 3, 4
		if node != "" {
			// One TypeScript worker beside the four Go ones (two in a
			// long round).
			cfg.TSWorkers, cfg.NodeBin, cfg.TSWorkerScript = 1, node, tsScript
			if *duration > 2*time.Minute {
				cfg.TSWorkers = 2
			}
		}
		cfg.Faults = faults
		// CHAOS_LIVENESS=free judges the ready-to-leased waits counted
		// while a worker had free slots, not only while one was idle
		// (chaos/liveness.go, docs/RELIABILITY.md "Liveness").
		cfg.StrictLiveness = os.Getenv("CHAOS_LIVENESS") == "free"
		if *duration > 2*time.Minute {
			// A long round starts fewer runs a second, so the checks that
			// read every run and object afterwards stay minutes, not hours.
			cfg.StartEvery = 200 * time.Millisecond
			// A long round's drain waits out a backlog built over many
			// minutes on a shared machine.
			cfg.DrainTimeout = 15 * time.Minute
			cfg.StoreEvery = 30 * time.Second
		} else {
			// Healthy, a short round drains in seconds; on a machine
			// shared with other builds it may take minutes, and "stuck"
			// must mean stuck, not slow.
			cfg.DrainTimeout = 4 * time.Minute
			// One to three store outages in a 12 s round.
			cfg.StoreEvery = 5 * time.Second
		}
		for range cfg.APIs {
			cfg.Addrs = append(cfg.Addrs, testinfra.FreeAddr(t))
		}
		cfg.Log = logWriter{t}
		ctx, cancel := context.WithTimeout(context.Background(), *duration+cfg.DrainTimeout+10*time.Minute)
		defer cancel()
		rep, err := chaos.Run(ctx, cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
		t.Log("\n" + rep.String())
		if len(rep.Failures) > 0 {
			t.Errorf("seed %d: %d checks failed (see above); replay with make chaos SEED=%d", s, len(rep.Failures), s)
		}
		if rep.Runs == 0 || rep.Executions == 0 {
			t.Errorf("seed %d: the round ran nothing (%d runs, %d executions)", s, rep.Runs, rep.Executions)
		}
	}

	t.Run("file+nobus", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		round(t, chaos.Config{Store: "file://" + root + "?nosync=true&tmp_max_age=3s", FileRoot: root})
	})
	t.Run("minio+nats", func(t *testing.T) {
		t.Parallel()
		round(t, minioRound(t, natsURL))
	})
	if !longRounds {
		return
	}
	// make chaos also runs MinIO with no bus: claims on one instance find
	// work made ready on another (by an event, or a sleep the reaper
	// fired) through their fallback scans alone.
	t.Run("minio+nobus", func(t *testing.T) {
		t.Parallel()
		cfg := minioRound(t, natsURL)
		cfg.NATS = ""
		round(t, cfg)
	})
}

// longRounds is set by -tags chaos (make chaos): a MinIO round with no
// bus joins the two rounds make test runs (file store with no bus, MinIO
// with NATS).
var longRounds = false

// minioRound is the MinIO round's store. With the MinIO binary at hand
// (CAIRN_MINIO_BIN, exported by scripts/testenv.sh) the round runs MinIO
// itself, on a fixed port and data directory, so the driver can kill -9,
// pause and restart it mid-load; otherwise it uses the test binary's
// MinIO container, which it does not restart (logged).
func minioRound(t *testing.T, natsURL string) chaos.Config {
	var ep *testinfra.MinIOEndpoint
	var sp *chaos.StoreProc
	name := testinfra.NewBucketName(t)
	if bin := os.Getenv("CAIRN_MINIO_BIN"); bin != "" {
		addr, console := storeAddr(t), storeAddr(t)
		ep = &testinfra.MinIOEndpoint{Endpoint: "http://" + addr, AccessKey: "minioadmin", SecretKey: "minioadmin", Region: "us-east-1"}
		sp = &chaos.StoreProc{
			Bin:    bin,
			Args:   []string{"server", t.TempDir(), "--address", addr, "--console-address", console, "--quiet"},
			Env:    []string{"MINIO_ROOT_USER=" + ep.AccessKey, "MINIO_ROOT_PASSWORD=" + ep.SecretKey, "MINIO_BROWSER=off"},
			Health: ep.Endpoint + "/minio/health/live",
			Setup:  func(context.Context) error { ep.CreateBucket(t, name); return nil },
		}
	} else {
		t.Log("CAIRN_MINIO_BIN is unset: the round uses the MinIO container and does not restart it (run scripts/testenv.sh for the binary)")
		ep = testinfra.MinIO(t)
		ep.CreateBucket(t, name)
	}
	return chaos.Config{
		Store:     fmt.Sprintf("s3://%s?endpoint=%s&use_path_style=true&region=%s", name, ep.Endpoint, ep.Region),
		StoreProc: sp,
		NATS:      natsURL,
		StoreEnv:  []string{"AWS_ACCESS_KEY_ID=" + ep.AccessKey, "AWS_SECRET_ACCESS_KEY=" + ep.SecretKey},
		OpenStore: func(ctx context.Context) (*blob.Bucket, error) {
			return s3.New(ctx, s3.Options{Bucket: name, Region: ep.Region, Endpoint: ep.Endpoint, UsePathStyle: true, AccessKey: ep.AccessKey, SecretKey: ep.SecretKey})
		},
	}
}

// storeAddr is a free 127.0.0.1 address for the store process, with a
// port below Linux's ephemeral range (32768–60999). The round restarts
// MinIO on the same port while every cairn process keeps dialling it;
// a port in the ephemeral range may meanwhile be the local port of some
// outgoing connection, and MinIO then exits "port already in use".
func storeAddr(t *testing.T) string {
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free port for the store below the ephemeral range")
	return ""
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// Command up runs cairn on one machine as several processes, the way the
// clouds run it: MinIO as the bucket, NATS as the notification bus, two
// API instances and the reaper (infra/local/Procfile), with a round-robin
// proxy in front of the API instances so that consecutive calls of one
// worker land on different instances. Everything binds 127.0.0.1.
//
//	go run ./infra/local/up            # Ctrl-C stops it (MinIO keeps running: make minio-stop)
//
// Steps: start MinIO (scripts/testenv.sh minio), create the bucket, build
// the binaries into .cairn/up/bin, start the Procfile's processes in order
// (waiting for NATS before the rest), wait for the API instances to be
// healthy, serve the proxy. Any process exiting stops them all.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("up: ")
	envFile := flag.String("env", "infra/local/local.env", "environment file")
	procfile := flag.String("procfile", "infra/local/Procfile", "processes to run")
	noMinIO := flag.Bool("no-minio", false, "do not start MinIO (use the one at MINIO_ENDPOINT)")
	flag.Parse()
	if err := run(*envFile, *procfile, !*noMinIO, nil); err != nil {
		log.Fatal(err)
	}
}

// entry is one Procfile line.
type entry struct {
	Name string
	Args []string // expanded
}

// loadEnv reads KEY=VALUE lines (# comments), expanding ${VAR} with what
// is defined above it; variables of the process environment win.
func loadEnv(path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	env := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, nil, fmt.Errorf("%s:%d: want KEY=VALUE", path, n)
		}
		if ov, set := os.LookupEnv(k); set {
			v = ov
		} else {
			v = os.Expand(v, func(name string) string { return env[name] })
		}
		if _, dup := env[k]; !dup {
			order = append(order, k)
		}
		env[k] = v
	}
	return env, order, sc.Err()
}

// loadProcfile reads "name: command" lines, expanding ${VAR} from env.
func loadProcfile(path string, env map[string]string) ([]entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []entry
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, cmd, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want name: command", path, n+1)
		}
		var missing []string
		cmd = os.Expand(cmd, func(k string) string {
			v, ok := env[k]
			if !ok {
				missing = append(missing, k)
			}
			return v
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s:%d: undefined %v", path, n+1, missing)
		}
		out = append(out, entry{Name: strings.TrimSpace(name), Args: strings.Fields(cmd)})
	}
	return out, nil
}

// commandEnv splits an entry into its program, arguments and the
// variables set in front of it ("env K=V prog args").
func (e entry) commandEnv() (prog string, args []string, vars []string) {
	a := e.Args
	if len(a) > 0 && a[0] == "env" {
		a = a[1:]
	}
	for len(a) > 0 && strings.Contains(a[0], "=") {
		vars = append(vars, a[0])
		a = a[1:]
	}
	if len(a) == 0 {
		return "", nil, vars
	}
	return a[0], a[1:], vars
}

// apiPorts are the PORT=… of the entries that run cairn-api.
func apiPorts(entries []entry) []string {
	var ports []string
	for _, e := range entries {
		prog, _, vars := e.commandEnv()
		if filepath.Base(prog) != "cairn-api" {
			continue
		}
		for _, v := range vars {
			if p, ok := strings.CutPrefix(v, "PORT="); ok {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// run does everything; ready, if set, is called with the proxy's address
// once the API instances are healthy (tests), and a value on stop ends it.
func run(envFile, procfile string, startMinIO bool, hooks *hooks) error {
	env, order, err := loadEnv(envFile)
	if err != nil {
		return err
	}
	entries, err := loadProcfile(procfile, env)
	if err != nil {
		return err
	}
	if err := setUp(env, startMinIO); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if hooks != nil && hooks.stop != nil {
		go func() {
			select {
			case <-hooks.stop:
				stop()
			case <-ctx.Done():
			}
		}()
	}
	exited := make(chan string, len(entries))
	procs, err := startAll(ctx, entries, env, order, exited)
	defer stopAll(procs)
	if err != nil {
		return err
	}
	ports := apiPorts(entries)
	targets, err := waitAPIs(ctx, ports)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+env["PROXY_PORT"])
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	srv := &http.Server{Handler: roundRobin(targets), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	log.Printf("cairn is up: API http://%s/v1/api (round-robin over %v), docs http://%s/docs", ln.Addr(), ports, ln.Addr())
	log.Printf("bucket %s, bus %s; Ctrl-C stops everything but MinIO (make minio-stop)", env["CAIRN_BLOB"], env["CAIRN_NOTIFY"])
	if hooks != nil && hooks.ready != nil {
		hooks.ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		log.Print("stopping")
		return nil
	case name := <-exited:
		return fmt.Errorf("%s exited; stopping the others", name)
	}
}

// setUp readies what the processes need: MinIO (if asked), the bucket,
// and the binaries.
func setUp(env map[string]string, startMinIO bool) error {
	if startMinIO {
		cmd := exec.Command("scripts/testenv.sh", "minio")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("starting MinIO: %w", err)
		}
	}
	if err := createBucket(env); err != nil {
		return err
	}
	return build()
}

// startAll starts the Procfile's entries in order, with the environment
// file's variables (in its order) over this process's, waiting for NATS
// after the first entry when the file sets NATS_PORT. It returns the
// processes it started, also on an error. Each one's name is sent on
// exited when it exits.
func startAll(ctx context.Context, entries []entry, env map[string]string, order []string, exited chan<- string) ([]*proc, error) {
	var procs []*proc
	baseEnv := os.Environ()
	for _, k := range order {
		baseEnv = append(baseEnv, k+"="+env[k])
	}
	for i, e := range entries {
		p, err := start(e, baseEnv, exited)
		if err != nil {
			return procs, err
		}
		procs = append(procs, p)
		if i == 0 && env["NATS_PORT"] != "" {
			if err := waitTCP(ctx, "127.0.0.1:"+env["NATS_PORT"], 10*time.Second); err != nil {
				return procs, fmt.Errorf("%s: %w", e.Name, err)
			}
		}
	}
	return procs, nil
}

// waitAPIs waits for the API instance on each port to answer healthz, in
// turn, and returns their URLs.
func waitAPIs(ctx context.Context, ports []string) ([]*url.URL, error) {
	var targets []*url.URL
	for _, p := range ports {
		u, _ := url.Parse("http://127.0.0.1:" + p)
		targets = append(targets, u)
		if err := waitHealthy(ctx, u.String()+"/v1/api/healthz", 30*time.Second); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

type hooks struct {
	ready func(proxyAddr string)
	stop  <-chan struct{}
}

// createBucket makes the bucket CAIRN_BLOB names, on MINIO_ENDPOINT.
func createBucket(env map[string]string) error {
	u, err := url.Parse(env["CAIRN_BLOB"])
	if err != nil || u.Scheme != "s3" {
		return fmt.Errorf("CAIRN_BLOB %q: up makes s3:// buckets on MinIO", env["CAIRN_BLOB"])
	}
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(env["MINIO_ENDPOINT"]), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], ""),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(u.Host)})
	if err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		return fmt.Errorf("creating bucket %s on %s: %w", u.Host, env["MINIO_ENDPOINT"], err)
	}
	return nil
}

// build compiles the binaries the Procfile runs.
func build() error {
	for out, pkg := range map[string]string{
		"cairn-api":    "./functions/api",
		"cairn-reaper": "./functions/reaper",
		"nats-server":  "github.com/nats-io/nats-server/v2",
	} {
		cmd := exec.Command("go", "build", "-o", ".cairn/up/bin/"+out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	return nil
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func start(e entry, env []string, exited chan<- string) (*proc, error) {
	prog, args, vars := e.commandEnv()
	cmd := exec.Command(prog, args...)
	cmd.Env = append(env, vars...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	go prefix(e.Name, pr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name, err)
	}
	p := &proc{name: e.Name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		pw.Close()
		close(p.done)
		exited <- e.Name
	}()
	return p, nil
}

var outMu sync.Mutex

func prefix(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		outMu.Lock()
		fmt.Fprintf(os.Stdout, "%-7s| %s\n", name, sc.Text())
		outMu.Unlock()
	}
}

// stopAll sends SIGTERM to every process, in reverse order, and waits up
// to 10 s before killing what is left.
func stopAll(procs []*proc) {
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(10 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func roundRobin(targets []*url.URL) http.Handler {
	var n atomic.Uint64
	proxies := make([]*httputil.ReverseProxy, len(targets))
	for i, t := range targets {
		proxies[i] = &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(t); r.Out.Host = r.In.Host },
			FlushInterval: -1,
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[int(n.Add(1)-1)%len(proxies)].ServeHTTP(w, r)
	})
}

func waitTCP(ctx context.Context, addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %s after %v", addr, within)
}

func waitHealthy(ctx context.Context, u string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.New(u + " not healthy after " + within.String())
}

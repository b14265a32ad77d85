package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairn-dev/cairn/api"
)

// lambdaAPIBudget is the most the Lambda API bootstrap may weigh (linux,
// make lambda's flags): every megabyte is read from the zip and mapped at
// each cold start. amd64 is the heavier architecture; arm64 is ≈ 8 %
// lighter.
const lambdaAPIBudget = 25_000_000

// testLambdaBootstraps builds the API function's and the dashboard
// function's bootstraps as make lambda does and runs each under a fake
// Lambda Runtime API, on an in-memory bucket: the API's bootstrap keeps
// its size budget and starts fast (exec → first invocation answered), and
// the dashboard is served by the dashboard function, not by the API's.
func testLambdaBootstraps(t *testing.T, dir string) {
	apiTags, dashTags := makeVar(t, "LAMBDA_TAGS"), makeVar(t, "LAMBDA_DASHBOARD_TAGS")
	boot := lambdaAPIBootstrap(t, dir)
	sized := boot
	if hostArch() != "amd64" {
		sized = goBuild(t, "./functions/api", dir+"/api-amd64/bootstrap", apiTags, "amd64")
	}
	size := fileSize(t, sized)
	t.Logf("Lambda API bootstrap (-tags %s, linux/amd64): %s (budget %s)", apiTags, mb(size), mb(lambdaAPIBudget))
	if size >= lambdaAPIBudget {
		t.Errorf("the Lambda API bootstrap is %s, over its %s budget. If it grew by megabytes at once, look for "+
			"reflection by method name the linker now reaches (text/template or html/template executing, reflect's "+
			"MethodByName with a computed name): go build -ldflags=-dumpdep -tags %s ./functions/api 2>&1 | grep ReflectMethod",
			mb(size), mb(lambdaAPIBudget), apiTags)
	}
	dash := goBuild(t, "./functions/api", dir+"/dashboard/bootstrap", dashTags, hostArch())
	t.Logf("Lambda dashboard bootstrap (-tags %s, linux/%s): %s", dashTags, hostArch(), mb(fileSize(t, dash)))

	for _, b := range []struct {
		name, bin string
		ui        int    // what GET /ui/ answers
		uiHas     string // and what its body says
	}{
		{"API", boot, http.StatusNotFound, "no dashboard"},
		{"dashboard", dash, http.StatusOK, "<h1>Runs</h1>"},
	} {
		const runs = 10
		var times []time.Duration
		for i := range runs {
			rt := newFakeRuntime(t)
			rt.invoke(v2Event("GET", api.BasePath+"/healthz", workerSecret, nil))
			start := time.Now()
			p := startProcess(t, b.bin, []string{
				"AWS_LAMBDA_RUNTIME_API=" + rt.addr(), "AWS_LAMBDA_FUNCTION_NAME=cairn-" + b.name,
				"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_REGION=us-east-1",
				"CAIRN_BLOB=mem://", "CAIRN_KEYS=" + keysEnv, "CAIRN_LOG_LEVEL=warn",
			})
			code, body := rt.answer(t, 10*time.Second)
			times = append(times, rt.answeredAt.Sub(start))
			mustStatus(t, b.name+" healthz", code, body, 200)
			if i == 0 {
				rt.invoke(v2Event("GET", "/ui/", workerSecret, nil))
				code, body = rt.answer(t, 10*time.Second)
				if code != b.ui || !strings.Contains(string(body), b.uiHas) {
					t.Errorf("%s bootstrap: GET /ui/ answered %d, want %d with %q: %.300s", b.name, code, b.ui, b.uiHas, body)
				}
			}
			p.cmd.Process.Kill()
			<-p.done
		}
		slices.Sort(times)
		median := times[len(times)/2]
		t.Logf("%s bootstrap cold start (exec → first invocation answered, a fake Runtime API, mem://), %d execs: median %v, min %v, max %v (target < 50 ms)",
			b.name, runs, median.Round(time.Millisecond), times[0].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
		// A regression guard, loose enough for a loaded 2-core machine;
		// the log line above is the measurement.
		if median > 500*time.Millisecond {
			t.Errorf("%s bootstrap: cold start median %v: something slow crept into start-up", b.name, median)
		}
	}
}

// lambdaAPIBootstrap is the API function's bootstrap as make lambda
// builds it (LAMBDA_TAGS), for this machine's architecture, built once
// into dir for the subtests of TestBinaries that run it.
func lambdaAPIBootstrap(t *testing.T, dir string) string {
	out := dir + "/api/bootstrap"
	if _, err := os.Stat(out); err == nil {
		return out
	}
	return goBuild(t, "./functions/api", out, makeVar(t, "LAMBDA_TAGS"), hostArch())
}

// fakeRuntime is the Lambda Runtime API a bootstrap polls for
// invocations (GET .../invocation/next) and answers (POST
// .../invocation/{id}/response), one invocation at a time.
type fakeRuntime struct {
	srv        *httptest.Server
	next       chan []byte
	answers    chan runtimeAnswer
	answeredAt time.Time // of the last answer taken
}

type runtimeAnswer struct {
	at   time.Time
	path string
	body []byte
}

func newFakeRuntime(t *testing.T) *fakeRuntime {
	rt := &fakeRuntime{next: make(chan []byte, 1), answers: make(chan runtimeAnswer, 1)}
	var ids atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		select {
		case ev := <-rt.next:
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", strconv.FormatInt(ids.Add(1), 10))
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:cairn")
			_, _ = w.Write(ev)
		case <-r.Context().Done():
		}
	})
	// The invocation's response or error, or an init error.
	mux.HandleFunc("POST /2018-06-01/runtime/", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rt.answers <- runtimeAnswer{at: time.Now(), path: r.URL.Path, body: b}
		w.WriteHeader(http.StatusAccepted)
	})
	rt.srv = httptest.NewServer(mux) // on 127.0.0.1
	t.Cleanup(rt.srv.Close)          // after the bootstrap is stopped: cleanups run last in, first out
	return rt
}

func (rt *fakeRuntime) addr() string { return strings.TrimPrefix(rt.srv.URL, "http://") }

func (rt *fakeRuntime) invoke(ev events.APIGatewayV2HTTPRequest) {
	b, _ := json.Marshal(ev)
	rt.next <- b
}

// answer waits for the bootstrap's answer to the invocation and returns
// its HTTP status and body.
func (rt *fakeRuntime) answer(t *testing.T, within time.Duration) (int, []byte) {
	t.Helper()
	select {
	case a := <-rt.answers:
		rt.answeredAt = a.at
		if !strings.HasSuffix(a.path, "/response") {
			t.Fatalf("the bootstrap posted %s: %s", a.path, a.body)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(a.body, &resp); err != nil || resp.StatusCode == 0 {
			t.Fatalf("not a payload 2.0 response (%v): %s", err, a.body)
		}
		return resp.StatusCode, v2Body(resp)
	case <-time.After(within):
		t.Fatalf("no answer within %v", within)
	}
	return 0, nil
}

package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn/blob"
	"github.com/cairn-dev/cairn/blob/mem"
)

// Unknown paths and methods are problems, not the mux's plain text.
func TestUnknownPathsAndMethodsAreProblems(t *testing.T) {
	a, _ := newTestAPI(t, nil)
	for _, path := range []string{"/nope", BasePath + "/nope", BasePath + "/runs/x/y/z", BasePath + "/"} {
		wantProblem(t, serve(a, httptest.NewRequest("GET", path, nil)), 404)
	}
	rec := serve(a, httptest.NewRequest("DELETE", BasePath+"/runs", nil))
	wantProblem(t, rec, 405)
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow %q, want GET and POST", allow)
	}
	rec = serve(a, httptest.NewRequest("GET", BasePath+"/workers/register", nil))
	wantProblem(t, rec, 405)
	if allow := rec.Header().Get("Allow"); allow != "POST" {
		t.Fatalf("Allow %q, want POST", allow)
	}
}

// panicDriver panics on every read: an engine path that panics.
type panicDriver struct{ blob.Driver }

func (panicDriver) Get(context.Context, string) (*blob.Object, error) { panic("driver bug") }

// A panic in a handler is that request's 500 problem, logged with its
// stack; the process and the next requests carry on.
func TestPanicIsRecoveredAs500Problem(t *testing.T) {
	a, logs := newTestAPI(t, blob.NewBucket(panicDriver{mem.New().Driver()}))
	huma.Register(a.huma, huma.Operation{OperationID: "boom", Method: "GET", Path: "/boom"},
		func(context.Context, *struct{}) (*struct{}, error) { panic("handler bug") })
	a.mux.HandleFunc("GET /raw-boom", func(http.ResponseWriter, *http.Request) { panic(errors.New("raw bug")) })

	for _, path := range []string{"/boom", "/raw-boom", BasePath + "/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV"} {
		p := wantProblem(t, serve(a, httptest.NewRequest("GET", path, nil)), 500)
		if strings.Contains(p["detail"].(string), "bug") {
			t.Fatalf("the problem tells the panic: %v", p)
		}
	}
	for _, want := range []string{"handler bug", "raw bug", "driver bug", "goroutine ", "problem_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, logs)
		}
	}
	// Still serving.
	if rec := serve(a, httptest.NewRequest("GET", BasePath+"/healthz", nil)); rec.Code != 200 {
		t.Fatalf("healthz after the panics: %d %s", rec.Code, rec.Body)
	}
	// A panic after the answer began cannot be replaced: the client gets
	// what was written, and the process carries on.
	a.mux.HandleFunc("GET /late-boom", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"partial":`))
		panic("late bug")
	})
	if rec := serve(a, httptest.NewRequest("GET", "/late-boom", nil)); rec.Code != 200 || rec.Body.String() != `{"partial":` {
		t.Fatalf("late panic: %d %s", rec.Code, rec.Body)
	}
}

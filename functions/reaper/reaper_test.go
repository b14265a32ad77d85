package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/cairn-dev/cairn/api"
	"github.com/cairn-dev/cairn/blob/mem"
	"github.com/cairn-dev/cairn/engine"
	"github.com/cairn-dev/cairn/internal/serve"
)

const (
	audience  = "https://cairn-reaper-abc123-uc.a.run.app/reap"
	scheduler = "cairn-scheduler@proj.iam.gserviceaccount.com"
)

// issuer is a local stand-in for Google's OIDC issuer: its own keys.
type issuer struct {
	t   *testing.T
	key *rsa.PrivateKey
	kid string
}

func newIssuer(t *testing.T, kid string) *issuer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{t: t, key: k, kid: kid}
}

func (is *issuer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: string(jose.RS256), Use: "sig"}
}

type tokenOpts struct {
	iss, aud, email string
	verified        bool
	exp             time.Duration // from now; 0 = no expiry
	nbf             time.Duration
}

func defaults() tokenOpts {
	return tokenOpts{iss: "https://accounts.google.com", aud: audience, email: scheduler, verified: true, exp: time.Hour}
}

func (is *issuer) token(o tokenOpts) string {
	is.t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), is.kid))
	if err != nil {
		is.t.Fatal(err)
	}
	now := time.Now()
	std := jwt.Claims{Issuer: o.iss, Subject: "1234567890", Audience: jwt.Audience{o.aud}, IssuedAt: jwt.NewNumericDate(now)}
	if o.exp != 0 {
		std.Expiry = jwt.NewNumericDate(now.Add(o.exp))
	}
	if o.nbf != 0 {
		std.NotBefore = jwt.NewNumericDate(now.Add(o.nbf))
	}
	s, err := jwt.Signed(sig).Claims(std).Claims(map[string]any{"email": o.email, "email_verified": o.verified}).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return s
}

func newEngine(t *testing.T) *engine.Engine {
	e, err := engine.New(mem.New(), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func post(t *testing.T, h http.Handler, path, auth string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, nil)
	if auth != "" {
		r.Header.Set("Authorization", "Bearer "+auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestReaperHTTPAuth(t *testing.T) {
	google := newIssuer(t, "k1")
	stranger := newIssuer(t, "k1") // same key id, other key
	other := newIssuer(t, "k9")    // a key Google does not have
	e := newEngine(t)
	keys, err := api.ParseKeys("ops:admin:" + api.HashSecret("admin-secret") + ",w:worker:" + api.HashSecret("worker-secret"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	v := &Verifier{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler},
		Keys: &StaticKeys{Set: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{google.jwk()}}}}
	h := newHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: log}), api.New(e, api.Config{Keys: keys, Logger: log}).Handler(), v, false, log)

	mod := func(f func(*tokenOpts)) string {
		o := defaults()
		f(&o)
		return google.token(o)
	}
	cases := []struct {
		name string
		auth string
		want int
	}{
		{"oidc", google.token(defaults()), 200},
		{"short issuer form", mod(func(o *tokenOpts) { o.iss = "accounts.google.com" }), 200},
		{"no credentials", "", 401},
		{"wrong audience", mod(func(o *tokenOpts) { o.aud = "https://elsewhere" }), 401},
		{"wrong issuer", mod(func(o *tokenOpts) { o.iss = "https://evil.example" }), 401},
		{"expired", mod(func(o *tokenOpts) { o.exp = -2 * time.Minute }), 401},
		{"no expiry", mod(func(o *tokenOpts) { o.exp = 0 }), 401},
		{"not yet valid", mod(func(o *tokenOpts) { o.nbf = 5 * time.Minute }), 401},
		{"other service account", mod(func(o *tokenOpts) { o.email = "someone@proj.iam.gserviceaccount.com" }), 401},
		{"unverified email", mod(func(o *tokenOpts) { o.verified = false }), 401},
		{"forged with same kid", stranger.token(defaults()), 401},
		{"unknown key", other.token(defaults()), 401},
		{"tampered payload", tamper(google.token(defaults())), 401},
		{"admin key", "admin-secret", 200},
		{"worker key", "worker-secret", 403},
		{"unknown key", "guess", 401},
	}
	for _, tc := range cases {
		for _, path := range reapPaths {
			code, body := post(t, h, path, tc.auth)
			if code != tc.want {
				t.Errorf("%s %s: %d %s, want %d", tc.name, path, code, body, tc.want)
			}
			if code == 200 {
				var st map[string]any
				if err := json.Unmarshal([]byte(body), &st); err != nil || st["list_requests"] == nil {
					t.Errorf("%s: answer %s is not reaper statistics", tc.name, body)
				}
			}
		}
	}
	// Health needs nothing; GET on the reap path is not a pass.
	r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("healthz %d", w.Code)
	}
	r = httptest.NewRequest(http.MethodGet, "/reap", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /reap %d", w.Code)
	}
}

// tamper swaps the payload's audience without re-signing.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	var claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(b, &claims)
	claims["email"] = "attacker@evil.example"
	b, _ = json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestDevModeNeedsNothing(t *testing.T) {
	e := newEngine(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := newHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: log}), api.New(e, api.Config{DevMode: true, Logger: log}).Handler(), nil, true, log)
	if code, body := post(t, h, "/reap", ""); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
}

// TestRemoteKeysRotation: a token signed by a key the cached set lacks
// refetches the set (the issuer rotated), but not more than once per
// MinRefresh; a fetch failure keeps the keys already known.
func TestRemoteKeysRotation(t *testing.T) {
	k1, k2 := newIssuer(t, "k1"), newIssuer(t, "k2")
	var served atomic.Value
	served.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1.jwk()}})
	var fetches atomic.Int32
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if fail.Load() {
			http.Error(w, "down", 500)
			return
		}
		json.NewEncoder(w).Encode(served.Load())
	}))
	defer srv.Close()
	rk := &RemoteKeys{URL: srv.URL, MinRefresh: time.Hour}
	v := &Verifier{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, Keys: rk}
	ctx := context.Background()
	if _, err := v.Verify(ctx, k1.token(defaults())); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, k1.token(defaults())); err != nil || fetches.Load() != 1 {
		t.Fatalf("cached: %v, %d fetches", err, fetches.Load())
	}
	served.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1.jwk(), k2.jwk()}})
	rk.MinRefresh = time.Nanosecond
	if id, err := v.Verify(ctx, k2.token(defaults())); err != nil || id.Email != scheduler {
		t.Fatalf("rotated key: %v", err)
	}
	if fetches.Load() != 2 {
		t.Fatalf("%d fetches, want 2", fetches.Load())
	}
	fail.Store(true)
	if _, err := v.Verify(ctx, newIssuer(t, "k3").token(defaults())); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := v.Verify(ctx, k1.token(defaults())); err != nil {
		t.Fatalf("known key refused while the issuer is down: %v", err)
	}
}

func TestES256(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "e1"))
	tok, _ := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://issuer.example", Audience: jwt.Audience{"aud"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}).
		Claims(map[string]any{"email": "a@b.c", "email_verified": true}).Serialize()
	v := &Verifier{Issuer: "https://issuer.example", Audience: "aud", Emails: []string{"A@b.c"},
		Keys: &StaticKeys{Set: jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "e1"}}}}}
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

func TestLambdaHandlerRunsOnePass(t *testing.T) {
	e := newEngine(t)
	h := lambdaHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	// What EventBridge Scheduler sends by default, and an empty event.
	for _, ev := range []string{`{}`, `{"version":"0","source":"aws.scheduler","detail-type":"Scheduled Event"}`} {
		r, err := h(context.Background(), json.RawMessage(ev))
		if err != nil || r.ListRequests != 1 {
			t.Fatalf("%s: %+v %v", ev, r, err)
		}
	}
}

//go:build !cairn_aws

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/internal/config"
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

func TestReaperHTTPAuth(t *testing.T) {
	google := newIssuer(t, "k1")
	stranger := newIssuer(t, "k1") // same key id, other key
	other := newIssuer(t, "k9")    // a key Google does not have
	e := newEngine(t)
	keys, err := auth.ParseKeys("ops:admin:" + auth.HashSecret("admin-secret") + ",w:worker:" + auth.HashSecret("worker-secret"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jwks := newJWKS(t, google.jwk())
	v := newTestVerifier(t, config.OIDC{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, JWKSURL: jwks.URL})
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

// jwks serves a JSON Web Key Set, as Google's certificate endpoint does,
// with the Cache-Control header cc; it counts its fetches.
type jwks struct {
	*httptest.Server
	set     atomic.Value // jose.JSONWebKeySet
	cc      atomic.Value // string
	status  atomic.Int32 // 0: 200
	fetches atomic.Int32
}

func newJWKS(t *testing.T, keys ...jose.JSONWebKey) *jwks {
	j := &jwks{}
	j.set.Store(jose.JSONWebKeySet{Keys: keys})
	j.cc.Store("")
	j.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.fetches.Add(1)
		if s := j.status.Load(); s != 0 {
			http.Error(w, "down", int(s))
			return
		}
		if cc := j.cc.Load().(string); cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		json.NewEncoder(w).Encode(j.set.Load())
	}))
	t.Cleanup(j.Close)
	return j
}

func newTestVerifier(t *testing.T, o config.OIDC) verifier {
	t.Helper()
	v, err := newVerifier(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKeysCachedAsTheIssuerSays: idtoken keeps the key set as long as
// its Cache-Control allows (Google's say hours) and fetches it again
// after: a rotated key is accepted once the cached set has expired.
func TestKeysCachedAsTheIssuerSays(t *testing.T) {
	k1, k2 := newIssuer(t, "k1"), newIssuer(t, "k2")
	j := newJWKS(t, k1.jwk())
	j.cc.Store("public, max-age=1")
	v := newTestVerifier(t, config.OIDC{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, JWKSURL: j.URL})
	ctx := context.Background()
	for range 2 {
		if _, err := v.Verify(ctx, k1.token(defaults())); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1 (cached)", n)
	}
	j.set.Store(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k1.jwk(), k2.jwk()}})
	time.Sleep(1100 * time.Millisecond)
	if id, err := v.Verify(ctx, k2.token(defaults())); err != nil || id.Email != scheduler {
		t.Fatalf("rotated key: %v", err)
	}
	if n := j.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

// TestKeysUnavailable: when the key set cannot be fetched the caller is
// told 503 (try again), not 401, and nothing runs.
func TestKeysUnavailable(t *testing.T) {
	google := newIssuer(t, "k1")
	e := newEngine(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	j := newJWKS(t, google.jwk())
	j.status.Store(http.StatusInternalServerError)
	v := newTestVerifier(t, config.OIDC{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, JWKSURL: j.URL})
	h := newHandler(serve.NewReaper(e, serve.ReaperConfig{Logger: log}), api.New(e, api.Config{DevMode: true, Logger: log}).Handler(), v, false, log)
	if code, body := post(t, h, "/reap", google.token(defaults())); code != http.StatusServiceUnavailable {
		t.Fatalf("issuer down: %d %s, want 503", code, body)
	}
	// Not JSON.
	j.status.Store(0)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>") }))
	defer bad.Close()
	v = newTestVerifier(t, config.OIDC{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, JWKSURL: bad.URL})
	if _, err := v.Verify(context.Background(), google.token(defaults())); !errors.Is(err, errKeysUnavailable) {
		t.Fatalf("garbage key set: %v", err)
	}
	// Unreachable.
	url := bad.URL
	bad.Close()
	v = newTestVerifier(t, config.OIDC{Issuer: "https://accounts.google.com", Audience: audience, Emails: []string{scheduler}, JWKSURL: url})
	if _, err := v.Verify(context.Background(), google.token(defaults())); !errors.Is(err, errKeysUnavailable) {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestES256(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sig, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "e1"))
	tok, _ := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://issuer.example", Audience: jwt.Audience{"aud"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}).
		Claims(map[string]any{"email": "a@b.c", "email_verified": true}).Serialize()
	j := newJWKS(t, jose.JSONWebKey{Key: &k.PublicKey, KeyID: "e1", Algorithm: string(jose.ES256), Use: "sig"})
	v := newTestVerifier(t, config.OIDC{Issuer: "https://issuer.example", Audience: "aud", Emails: []string{"A@b.c"}, JWKSURL: j.URL})
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

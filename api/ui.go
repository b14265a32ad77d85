//go:build !cairn_noui

// The dashboard is left out of builds tagged cairn_noui (ui_noui.go): its
// html/template execution reflects on method names, which makes the Go
// linker keep every exported method of every type the program can reach,
// ≈ 10 MB more binary. make lambda builds the API function so, and the
// dashboard function, serving /ui/ and /docs on AWS, with it.

package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/ui"
)

// mountUI serves the dashboard under /ui/ and redirects / there, its
// icon at /favicon.ico, and the API reference at /docs with its assets embedded. Its
// pages check keys as the operations do: the read scope to see a page,
// execute for its actions (which call the operations themselves).
func (a *API) mountUI() {
	h := ui.New(a.engine, ui.Config{APIBase: BasePath, Authorize: a.authorizeUI})
	a.mux.Handle(ui.Prefix, h)
	a.mux.Handle("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusFound))
	a.mux.Handle("GET "+ui.FaviconPath, ui.Favicon())
	docs := ui.Docs(a.docsSpec)
	a.mux.Handle("GET "+ui.DocsPath, docs)
	a.mux.Handle("GET "+ui.DocsPath+"/", docs)
}

// docsSpec is the OpenAPI document as the reference page reads it: the
// server that serves the page first, so that its Try-It calls the server
// the reader opened (on Lambda or Cloud Run, not 127.0.0.1:8080, the
// published document's first server, kept first there for generators).
func (a *API) docsSpec() []byte {
	a.docsOnce.Do(func() {
		o := *a.OpenAPI()
		o.Servers = []*huma.Server{{URL: "/", Description: "The server that serves this page."}}
		a.docsJSON, _ = json.Marshal(&o)
	})
	return a.docsJSON
}

func (a *API) authorizeUI(r *http.Request) (ui.Access, int, string) {
	if a.devMode {
		return ui.Access{Who: "dev", Execute: true}, 0, ""
	}
	k, ok := a.authenticate(r.Header.Get("Authorization"))
	if !ok {
		return ui.Access{}, http.StatusUnauthorized, "This dashboard needs an API key with the read scope."
	}
	if !auth.Grants(k.Scopes, auth.ScopeRead) {
		return ui.Access{}, http.StatusForbidden, fmt.Sprintf("Key %q lacks the %q scope the dashboard needs.", k.ID, auth.ScopeRead)
	}
	return ui.Access{Who: k.ID, Execute: auth.Grants(k.Scopes, auth.ScopeExecute)}, 0, ""
}

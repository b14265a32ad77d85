package api

import (
	"fmt"
	"net/http"

	"github.com/cairn-dev/cairn/auth"
	"github.com/cairn-dev/cairn/ui"
)

// mountUI serves the dashboard under /ui/ and redirects / there, and
// the API reference at /docs with its assets embedded. Its
// pages check keys as the operations do: the read scope to see a page,
// execute for its actions (which call the operations themselves).
func (a *API) mountUI() {
	h := ui.New(a.engine, ui.Config{APIBase: BasePath, Authorize: a.authorizeUI})
	a.mux.Handle(ui.Prefix, h)
	a.mux.Handle("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusFound))
	docs := ui.Docs("/openapi")
	a.mux.Handle("GET "+ui.DocsPath, docs)
	a.mux.Handle("GET "+ui.DocsPath+"/", docs)
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

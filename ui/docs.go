package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

// The API reference page's assets, vendored from npm by
// scripts/vendor-docs.sh (ui/docs/VERSION says which and under what
// licence): the page Huma serves loads them from a CDN, this one from
// the binary, so /docs works offline.
//
//go:embed docs/web-components.min.js docs/styles.min.css docs/LICENSE docs/VERSION docs/web-components.min.js.LICENSE.txt
var docsFiles embed.FS

// DocsPath is where the API reference is served; its assets are below it.
const DocsPath = "/docs"

// Docs serves the API reference page (Stoplight Elements, as Huma's own
// page, with its assets embedded) at DocsPath, the assets under
// DocsPath/, and the OpenAPI document spec returns, which the page reads,
// at DocsPath/openapi.json.
func Docs(spec func() []byte) http.Handler {
	page := []byte(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cairn API reference</title>
<link rel="stylesheet" href="` + DocsPath + `/styles.min.css">
<script src="` + DocsPath + `/web-components.min.js"></script>
</head>
<body>
<elements-api apiDescriptionUrl="` + DocsPath + `/openapi.json" router="hash" layout="sidebar" tryItCredentialsPolicy="same-origin"></elements-api>
</body>
</html>`)
	sub, _ := fs.Sub(docsFiles, "docs")
	files := cacheable(http.StripPrefix(DocsPath+"/", http.FileServerFS(sub)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DocsPath, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; "+
			"img-src 'self' data:; font-src 'self' data:; script-src 'self'; style-src 'self' 'unsafe-inline'")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET "+DocsPath+"/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(spec())
	})
	mux.Handle("GET "+DocsPath+"/", files)
	return mux
}

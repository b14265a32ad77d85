#!/usr/bin/env bash
# scripts/vendor-docs.sh — vendor the API reference page's assets from npm
# into ui/docs/, so /docs works offline (they are embedded in the binary).
#
# The package and version are the ones Huma's own /docs page loads from
# unpkg; the files are checked against the sha384 integrity Huma pins for
# them, so the vendored copy is byte for byte what that page would load.
# Run by `make vendor-docs`; its output is committed.
set -euo pipefail

PKG=@stoplight/elements
VERSION=9.0.15
JS_SHA384=xjOcq9PZ/k+pGtPS/xcsCRXGjKKfTlIa4H1IYEnC+97jNa6sAMWTNrV6hY08W3GL
CSS_SHA384=iVQBHadsD+eV0M5+ubRCEVXrXEBj+BqcuwjUwPoVJc0Pb1fmrhYSAhL+BFProHdV

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/ui/docs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null && tar xzf ./*.tgz)
check() {
  got=$(openssl dgst -sha384 -binary "$tmp/package/$1" | base64)
  if [ "$got" != "$2" ]; then
    echo "vendor-docs: $1 of $PKG@$VERSION has sha384 $got, want $2" >&2
    exit 1
  fi
}
check web-components.min.js "$JS_SHA384"
check styles.min.css "$CSS_SHA384"
mkdir -p "$out"
cp "$tmp/package/web-components.min.js" "$tmp/package/styles.min.css" "$out/"
cp "$tmp/package/LICENSE" "$out/LICENSE"
cp "$tmp/package/web-components.min.js.LICENSE.txt" "$out/web-components.min.js.LICENSE.txt"
cat >"$out/VERSION" <<V
$PKG@$VERSION (npm), licence Apache-2.0 (LICENSE; bundled third-party notices in web-components.min.js.LICENSE.txt)
web-components.min.js sha384-$JS_SHA384
styles.min.css sha384-$CSS_SHA384
vendored by scripts/vendor-docs.sh
V
echo "vendor-docs: $PKG@$VERSION in ${out#"$root"/}"

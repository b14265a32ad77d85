#!/usr/bin/env bash
# Generates the Python SDK's code from the committed OpenAPI document:
# the client (openapi-python-client, pinned in
# sdk/python/requirements-dev.txt) as the package _api, and the table of
# which options each step kind takes (x-kind-options) as _kinds.py.
# With no argument it writes them into sdk/python/src/cairn (make
# openapi); with a directory, there (make openapi-check compares).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/sdk/python/src/cairn}
venv=$("$root/scripts/python-venv.sh")
spec=$root/openapi/openapi.json

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The generator formats what it writes with the ruff of the environment.
PATH=$venv/bin:$PATH "$venv/bin/openapi-python-client" generate --path "$spec" \
	--config "$root/sdk/python/openapi-python-client.yaml" --meta none --output-path "$tmp/_api" >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log" >&2; exit 1; }
if grep -qi 'warning' "$tmp/log"; then
	cat "$tmp/log" >&2
	echo "python-gen: the generator warned: the client may be missing parts of the spec" >&2
	exit 1
fi
"$venv/bin/python" "$root/sdk/python/scripts/gen_kinds.py" "$spec" >"$tmp/_kinds.py"
PATH=$venv/bin:$PATH ruff format --quiet --no-cache --isolated "$tmp/_kinds.py"

mkdir -p "$out"
rm -rf "$out/_api"
mv "$tmp/_api" "$out/_api"
mv "$tmp/_kinds.py" "$out/_kinds.py"

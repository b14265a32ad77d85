#!/usr/bin/env bash
# Prints the path of the API fuzzer's virtual environment, creating it
# first when it is missing: python3 -m venv, then the pinned packages of
# scripts/spec-fuzz/requirements.txt (schemathesis) from PyPI. As
# scripts/python-venv.sh does for the Python SDK: it lives under
# ~/.cache/cairn/specfuzz-<hash of the pins and the Python>, only the
# first run downloads, and CAIRN_SPECFUZZ_VENV overrides the path.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
req=$root/scripts/spec-fuzz/requirements.txt
hash=$( { cat "$req"; "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
venv=${CAIRN_SPECFUZZ_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn/specfuzz-$hash}

. "$root/scripts/lib/venv.sh"
ensure_venv "$venv" "$py" "$req" spec-fuzz

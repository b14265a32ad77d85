#!/usr/bin/env bash
# Prints the path of the Python SDK's virtual environment, creating it
# first when it is missing: python3 -m venv, then the pinned tools and
# dependencies of sdk/python/requirements-dev.txt from PyPI, then the
# package itself (editable, so the tests see the work tree's code).
#
# The environment lives under ~/.cache/cairn/pyvenv-<hash>, the hash of
# the requirements, the package's pyproject and this checkout's path: a
# changed pin makes a new one, and two checkouts never share an editable
# install. CAIRN_PYVENV overrides the path. Only the first run downloads;
# the tests never do.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
req=$root/sdk/python/requirements-dev.txt
proj=$root/sdk/python/pyproject.toml
hash=$( { cat "$req" "$proj"; echo "$root"; "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
venv=${CAIRN_PYVENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn/pyvenv-$hash}

. "$root/scripts/lib/venv.sh"
ensure_venv "$venv" "$py" "$req" python-venv "$root/sdk/python"

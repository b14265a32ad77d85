# ensure_venv VENV PYTHON REQUIREMENTS LABEL [EDITABLE_DIR]: prints VENV,
# creating it first when it is missing (python -m venv, the pinned
# requirements from PyPI, then EDITABLE_DIR installed editable when
# given). A finished venv carries .cairn-complete; one creator at a
# time (a second caller waits on the lock). Sourced by the venv scripts.
ensure_venv() {
	local venv=$1 py=$2 req=$3 label=$4 editable=${5:-}
	if [ ! -f "$venv/.cairn-complete" ]; then
		mkdir -p "$(dirname "$venv")"
		exec 9>"$venv.lock"
		flock 9
		if [ ! -f "$venv/.cairn-complete" ]; then
			rm -rf "$venv"
			echo "$label: creating $venv (pinned dependencies from PyPI)" >&2
			"$py" -m venv "$venv" >&2
			"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$req" >&2
			if [ -n "$editable" ]; then
				"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q --no-deps --no-build-isolation -e "$editable" >&2
			fi
			touch "$venv/.cairn-complete"
		fi
		exec 9>&-
	fi
	echo "$venv"
}

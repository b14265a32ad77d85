#!/usr/bin/env bash
# scripts/testenv.sh — test dependencies for `make test`.
#
#   ensure      make a Docker-compatible engine reachable, build the MinIO image
#               if needed, install Azurite and Chromium (the dashboard's
#               browser tests); then print the env exports.
#   env         the same, but print ONLY the exports on stdout, for
#               `eval "$(scripts/testenv.sh env)"`. All logging goes to stderr.
#   minio       run a MinIO for manual use on 127.0.0.1:9000 (console :9001),
#               data under .cairn/minio, credentials minioadmin/minioadmin.
#   minio-stop  stop it.
#
# Idempotent; a second run only checks (well under a second). Nothing is
# downloaded as a prebuilt binary: podman comes from apt, MinIO is built from
# source through the Go module proxy, Azurite comes from npm.
#
# Changes to the system itself — installing podman, runc and chromium with apt-get,
# writing /etc/containers/containers.conf — are made only under CI
# (CI=true; .ci/run exports it) or when asked with CAIRN_TESTENV_SYSTEM=1.
# Otherwise the script prints what it would change and exits with status 3.
# The rest (the MinIO build, Azurite, the podman API service) needs no
# permission; a Docker engine reachable on DOCKER_HOST or
# /var/run/docker.sock needs none of it.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c   # pinned 2026 build
AZURITE_VERSION=3.37.0
MINIO_LOCAL_IMAGE=localhost/cairn-minio:${MINIO_VERSION}
MINIO_PUBLIC_IMAGE=minio/minio:latest               # used when a real Docker can pull

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CAIRN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn}
MINIO_BIN=$CACHE/minio-$MINIO_VERSION/minio
AZURITE_BIN=$CACHE/azurite-$AZURITE_VERSION/node_modules/.bin/azurite-blob
PODMAN_SOCK=/run/podman/podman.sock
CONTAINERS_CONF=/etc/containers/containers.conf

log() { echo "testenv: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# May this run change the system (apt packages, /etc)? Only under CI or
# when asked.
system_changes_allowed() { [[ ${CI:-} == true || ${CAIRN_TESTENV_SYSTEM:-} == 1 ]]; }

# engine_api ADDR PATH [curl args]: call the Docker API (which podman serves
# too) at a DOCKER_HOST-style address, unix:// or tcp://.
engine_api() {
  local addr=$1 path=$2
  shift 2
  case $addr in
    unix://*) curl -sfm 5 --unix-socket "${addr#unix://}" "http://d$path" "$@" ;;
    tcp://*)  curl -sfm 5 "http://${addr#tcp://}$path" "$@" ;;
    *) return 1 ;;
  esac
}
engine_answers() { engine_api "$1" /_ping -o /dev/null 2>/dev/null; }

# --- container engine ---------------------------------------------------------

# apt_get waits up to ten minutes for dpkg's lock (another install on the
# machine, unattended upgrades) instead of failing at once.
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }

install_podman() {
  command -v podman >/dev/null && return
  log "installing podman + runc via apt (one-time, ~1 min; log: $CACHE/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  { apt_get update && apt_get install -y podman runc; } >"$CACHE/apt.log" 2>&1 ||
    { tail -n 20 "$CACHE/apt.log" >&2; die "apt-get failed"; }
}

# containers_conf prints the containers.conf podman needs here: the
# sandbox refuses raising rlimits and crun's defaults trip over that.
containers_conf() {
  cat <<'EOF'
# written by cairn scripts/testenv.sh
[containers]
default_ulimits = ["nofile=1024:1024","nproc=1024:1024"]

[engine]
runtime = "runc"
EOF
}

containers_conf_ok() {
  [[ -f $CONTAINERS_CONF ]] &&
    grep -q '^default_ulimits = \["nofile=1024:1024","nproc=1024:1024"\]' "$CONTAINERS_CONF" &&
    grep -q '^runtime = "runc"' "$CONTAINERS_CONF"
}

# check_system_changes: when podman is missing or containers.conf is not as
# needed, and this run may not change the system, print what it would
# change and exit 3 — before changing anything.
check_system_changes() {
  local need_podman=0 need_conf=0
  command -v podman >/dev/null || need_podman=1
  containers_conf_ok || need_conf=1
  (( need_podman || need_conf )) || return 0
  system_changes_allowed && return 0
  log "no Docker engine is reachable; setting up podman would change this system:"
  if (( need_podman )); then
    log "  - apt-get install -y podman runc"
  fi
  if (( need_conf )); then
    if [[ -f $CONTAINERS_CONF ]]; then
      log "  - rewrite $CONTAINERS_CONF (keeping the current one as $CONTAINERS_CONF.bak-cairn):"
      diff -u --label "$CONTAINERS_CONF" --label "$CONTAINERS_CONF (new)" \
        "$CONTAINERS_CONF" <(containers_conf) | sed 's/^/      /' >&2 || true
    else
      log "  - create $CONTAINERS_CONF:"
      containers_conf | sed 's/^/      /' >&2
    fi
  fi
  log "Nothing was changed. To allow it, run again with CAIRN_TESTENV_SYSTEM=1,"
  log "e.g.  CAIRN_TESTENV_SYSTEM=1 make test  (CI=true, which .ci/run sets, allows it too);"
  log "or make a Docker engine reachable (DOCKER_HOST, /var/run/docker.sock): then nothing is changed."
  exit 3
}

configure_podman() {
  containers_conf_ok && return
  [[ -f $CONTAINERS_CONF ]] && cp "$CONTAINERS_CONF" "$CONTAINERS_CONF.bak-cairn"
  log "writing $CONTAINERS_CONF"
  mkdir -p "$(dirname "$CONTAINERS_CONF")"
  containers_conf >"$CONTAINERS_CONF"
}

start_podman_service() {
  engine_answers "unix://$PODMAN_SOCK" && return
  log "starting podman API service on $PODMAN_SOCK"
  mkdir -p "$(dirname "$PODMAN_SOCK")" "$CACHE"
  rm -f "$PODMAN_SOCK"   # a stale socket left by a killed service
  # setsid + all fds redirected: survives this script and never holds the
  # stdout of `$(scripts/testenv.sh env)` open. Started from / : conmon
  # inherits the service's working directory, and one that is deleted
  # later (a test's temporary checkout) fails every container start with
  # "write child: broken pipe".
  (cd / && exec setsid podman system service --time=0 "unix://$PODMAN_SOCK" \
    </dev/null >>"$CACHE/podman-service.log" 2>&1) &
  for _ in $(seq 100); do
    engine_answers "unix://$PODMAN_SOCK" && return
    sleep 0.2
  done
  die "podman service did not answer within 20s; see $CACHE/podman-service.log"
}

# Sets DOCKER_HOST and ENGINE_CLI (podman|docker).
ensure_engine() {
  if [[ -n ${DOCKER_HOST:-} ]] && engine_answers "$DOCKER_HOST"; then
    log "using DOCKER_HOST=$DOCKER_HOST"
  elif engine_answers unix:///var/run/docker.sock; then
    DOCKER_HOST=unix:///var/run/docker.sock
    log "using $DOCKER_HOST"
  else
    [[ -n ${DOCKER_HOST:-} ]] && log "DOCKER_HOST=$DOCKER_HOST does not answer; falling back to podman"
    [[ $(id -u) == 0 ]] || die "no Docker engine reachable, and installing podman needs root"
    check_system_changes
    install_podman
    configure_podman
    start_podman_service
    DOCKER_HOST=unix://$PODMAN_SOCK
  fi
  # Podman's answers carry Libpod-* headers (its /version is slow: avoid it).
  local headers
  headers=$(engine_api "$DOCKER_HOST" /_ping -o /dev/null -D - || true)
  if [[ ${headers,,} == *libpod-api-version* ]]; then
    ENGINE_CLI=podman
  else
    ENGINE_CLI=docker
  fi
}

# --- MinIO --------------------------------------------------------------------

ensure_minio_bin() {
  [[ -x $MINIO_BIN ]] && return
  log "building MinIO $MINIO_VERSION from source (one-time, ~10-12 min on 2 cores)"
  local tmp
  tmp=$(mktemp -d "$CACHE/minio-build.XXXXXX")
  # Built outside this module so our go.mod is untouched.
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-buildvcs=false \
     go install "github.com/minio/minio@$MINIO_VERSION") >&2
  mkdir -p "$(dirname "$MINIO_BIN")"
  mv "$tmp/minio" "$MINIO_BIN"   # atomic: a half-built binary never counts as cached
  rm -rf "$tmp"
}

# Sets MINIO_IMAGE: the image the tests should run.
ensure_minio_image() {
  if [[ -n ${CAIRN_MINIO_IMAGE:-} ]]; then          # explicit choice wins
    MINIO_IMAGE=$CAIRN_MINIO_IMAGE
  elif [[ $ENGINE_CLI == docker && -z ${CAIRN_MINIO_LOCAL:-} ]]; then
    MINIO_IMAGE=$MINIO_PUBLIC_IMAGE                 # real Docker pulls it
  else
    MINIO_IMAGE=$MINIO_LOCAL_IMAGE                  # no registry: build locally
  fi
  [[ $MINIO_IMAGE == "$MINIO_LOCAL_IMAGE" ]] || return 0
  engine_api "$DOCKER_HOST" "/images/$MINIO_IMAGE/json" -o /dev/null && return
  ensure_minio_bin
  local cli=(podman)
  [[ $ENGINE_CLI == docker ]] && cli=(docker -H "$DOCKER_HOST")
  log "building image $MINIO_IMAGE"
  local ctx
  ctx=$(mktemp -d "$CACHE/minio-image.XXXXXX")
  ln "$MINIO_BIN" "$ctx/minio" 2>/dev/null || cp "$MINIO_BIN" "$ctx/minio"
  cat >"$ctx/Containerfile" <<'EOF'
FROM scratch
COPY minio /minio
EXPOSE 9000
ENTRYPOINT ["/minio"]
EOF
  "${cli[@]}" build -q -t "$MINIO_IMAGE" -f "$ctx/Containerfile" "$ctx" >&2
  rm -rf "$ctx"
}

# --- Azurite ------------------------------------------------------------------

ensure_azurite() {
  [[ -x $AZURITE_BIN ]] && return
  log "installing azurite@$AZURITE_VERSION from npm (one-time)"
  npm install --silent --no-audit --no-fund \
    --prefix "$(dirname "$(dirname "$(dirname "$AZURITE_BIN")")")" "azurite@$AZURITE_VERSION" >&2
  [[ -x $AZURITE_BIN ]] || die "npm install finished but $AZURITE_BIN is missing"
}

# ensure_chromium: Debian's chromium for the dashboard's browser tests
# (ui/browser_test.go), installed with apt under the same rule as podman.
# Without permission it is not installed and the browser tests skip,
# except under CI, where CI=true allows the install (and a test that
# finds no browser fails).
ensure_chromium() {
  CHROMIUM_BIN=$(command -v chromium || command -v chromium-browser || true)
  [[ -n $CHROMIUM_BIN ]] && return
  if ! system_changes_allowed || [[ $(id -u) != 0 ]]; then
    log "chromium is not installed: the dashboard's browser tests will skip."
    log "  To install it (apt-get install -y chromium): CAIRN_TESTENV_SYSTEM=1 make testenv (as root)"
    return
  fi
  log "installing chromium via apt (one-time; log: $CACHE/apt-chromium.log)"
  { apt_get update && DEBIAN_FRONTEND=noninteractive apt_get install -y chromium; } >"$CACHE/apt-chromium.log" 2>&1 ||
    { tail -n 20 "$CACHE/apt-chromium.log" >&2; die "apt-get install chromium failed"; }
  CHROMIUM_BIN=$(command -v chromium) || die "apt installed chromium but it is not on PATH"
}

# --- subcommands --------------------------------------------------------------

ensure() {
  mkdir -p "$CACHE"
  # One setup at a time per machine: two checkouts' test runs (or make test
  # beside make chaos) would otherwise race each other's apt-get, podman
  # service and MinIO build. Released on return or exit (daemons started
  # here inherit fd 9, but unlocking releases it for them too).
  exec 9>"$CACHE/testenv.lock"
  trap 'flock -u 9 2>/dev/null' EXIT
  flock -w 1800 9 || die "another testenv setup held $CACHE/testenv.lock for 30 minutes"
  ensure_engine
  ensure_minio_image
  ensure_azurite
  ensure_chromium
  flock -u 9
}

print_env() {
  echo "export DOCKER_HOST=$DOCKER_HOST"
  echo "export TESTCONTAINERS_RYUK_DISABLED=true"
  echo "export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1"
  echo "export CAIRN_MINIO_IMAGE=$MINIO_IMAGE"
  echo "export CAIRN_AZURITE_BIN=$AZURITE_BIN"
  # The chaos suite runs MinIO from its binary to kill -9 and restart it.
  [[ ! -x $MINIO_BIN ]] || echo "export CAIRN_MINIO_BIN=$MINIO_BIN"
  [[ -z ${CHROMIUM_BIN:-} ]] || echo "export CAIRN_CHROMIUM=$CHROMIUM_BIN"
}

MINIO_DIR=$ROOT/.cairn
MINIO_PID=$MINIO_DIR/minio.pid

# true if the pid file names a live MinIO (not a recycled pid).
minio_running() {
  local pid
  pid=$(cat "$MINIO_PID" 2>/dev/null) || return 1
  grep -qs minio "/proc/$pid/cmdline"
}

minio_start() {
  local url=http://127.0.0.1:9000
  if ! minio_running; then
    mkdir -p "$CACHE" "$MINIO_DIR/minio"
    echo '*' >"$MINIO_DIR/.gitignore"   # keep .cairn/ out of git
    ensure_minio_bin
    log "starting MinIO (log: $MINIO_DIR/minio.log)"
    MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin \
      setsid "$MINIO_BIN" server "$MINIO_DIR/minio" \
        --address 127.0.0.1:9000 --console-address 127.0.0.1:9001 \
        </dev/null >>"$MINIO_DIR/minio.log" 2>&1 &
    echo $! >"$MINIO_PID"
    for _ in $(seq 150); do
      curl -sfm 1 "$url/minio/health/live" >/dev/null 2>&1 && break
      minio_running || die "MinIO exited; see $MINIO_DIR/minio.log"
      sleep 0.2
    done
    curl -sfm 1 "$url/minio/health/live" >/dev/null 2>&1 || die "MinIO did not answer within 30s"
  fi
  echo "MinIO: $url (console http://127.0.0.1:9001), user minioadmin / password minioadmin"
}

minio_stop() {
  if minio_running; then
    local pid
    pid=$(<"$MINIO_PID")
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    log "MinIO stopped"
  else
    log "MinIO not running"
  fi
  rm -f "$MINIO_PID"
}

case ${1:-} in
  ensure)     ensure; print_env ;;
  env)        ensure; print_env ;;   # stdout carries only the exports
  minio)      minio_start ;;
  minio-stop) minio_stop ;;
  *) echo "usage: $0 ensure|env|minio|minio-stop" >&2; exit 2 ;;
esac

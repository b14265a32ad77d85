#!/usr/bin/env bash
# infra/image/build.sh — build cairn's container image (make image).
#
#   infra/image/build.sh [IMAGE]        build IMAGE [localhost/cairn:dev]
#
# The image is FROM scratch: two static binaries (CGO_ENABLED=0, -trimpath,
# -ldflags "-s -w"), the host's CA certificates and tzdata, and a non-root
# user (65532). No base image is pulled, so it builds where no registry is
# reachable. Environment:
#
#   ARCH           GOARCH of the binaries [the host's]
#   TAGS           Go build tags [none: every driver, so one image runs on
#                  Cloud Run (gs://), against MinIO/S3 (s3://) or a volume
#                  (file://); -tags cairn_gcp keeps the Google drivers only]
#   CONTAINER_CLI  podman or docker [podman if installed, else docker]
#   CONTEXT_DIR    assemble the build context there and keep it
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${1:-localhost/cairn:dev}
ARCH=${ARCH:-$(cd "$ROOT" && go env GOARCH)}
TAGS=${TAGS:-}
CLI=${CONTAINER_CLI:-}
if [[ -z $CLI ]]; then
  if command -v podman >/dev/null; then CLI=podman; else CLI=docker; fi
fi
CERTS=/etc/ssl/certs/ca-certificates.crt
ZONEINFO=/usr/share/zoneinfo

log() { echo "image: $*" >&2; }
[[ -f $CERTS ]] || { log "$CERTS is missing: apt-get install ca-certificates"; exit 1; }
[[ -d $ZONEINFO ]] || { log "$ZONEINFO is missing: apt-get install tzdata"; exit 1; }

if [[ -n ${CONTEXT_DIR:-} ]]; then
  ctx=$CONTEXT_DIR
  mkdir -p "$ctx"
else
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
fi

for fn in api reaper; do
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -trimpath -ldflags="-s -w" \
     ${TAGS:+-tags "$TAGS"} -o "$ctx/cairn-$fn" "./functions/$fn")
done
mkdir -p "$ctx/etc/ssl/certs" "$ctx/usr/share"
cp "$CERTS" "$ctx/etc/ssl/certs/ca-certificates.crt"
cp -rL "$ZONEINFO" "$ctx/usr/share/zoneinfo"
echo 'cairn:x:65532:65532:cairn:/:/sbin/nologin' >"$ctx/etc/passwd"
echo 'cairn:x:65532:' >"$ctx/etc/group"
cp "$ROOT/infra/image/Containerfile" "$ctx/Containerfile"

log "building $IMAGE with $CLI (linux/$ARCH${TAGS:+, tags $TAGS})"
"$CLI" build -q --platform "linux/$ARCH" -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null
size=$("$CLI" image inspect "$IMAGE" --format '{{.Size}}')
log "built $IMAGE: $((size / 1000000)) MB (cairn-api $(($(stat -c %s "$ctx/cairn-api") / 1000000)) MB, cairn-reaper $(($(stat -c %s "$ctx/cairn-reaper") / 1000000)) MB)"
echo "$IMAGE"

#!/usr/bin/env bash
# infra/gcp/deploy.sh — deploy cairn to Google Cloud (Cloud Run + GCS +
# Pub/Sub + Cloud Scheduler). Idempotent: run it again to update.
#
#   PROJECT=my-project REGION=europe-west1 IMAGE=REGION-docker.pkg.dev/PROJECT/cairn/cairn:TAG \
#     infra/gcp/deploy.sh
#
# Needs gcloud (authenticated, with rights to create these resources) and
# curl. The image is `make image`, pushed to Artifact Registry (see
# docs/DEPLOY.md). The Cloud Run services are created from the v2 API
# resources in this folder (service-*.json), the scheduler job from
# scheduler-reaper.json; ${PROJECT}, ${REGION}, ${BUCKET}, ${IMAGE} and
# ${REAPER_URL} in them are filled in here. infra/infra_test.go parses
# them offline and checks the invariants.
#
# Least privilege: three service accounts, each bound on single resources,
# never on the project:
#   cairn-api        custom role cairnBucketObjects on the bucket; publisher
#                    on the topic, subscriber on the subscription; accessor
#                    of the secret cairn-keys
#   cairn-reaper     cairnBucketObjects on the bucket; publisher on the topic
#   cairn-scheduler  run.invoker on the reaper service
set -euo pipefail

: "${PROJECT:?set PROJECT}" "${REGION:?set REGION}" "${IMAGE:?set IMAGE (make image, pushed to Artifact Registry)}"
BUCKET=${BUCKET:-$PROJECT-cairn}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN_API=https://run.googleapis.com/v2/projects/$PROJECT/locations/$REGION
SCHED_API=https://cloudscheduler.googleapis.com/v1/projects/$PROJECT/locations/$REGION
G=(gcloud --project "$PROJECT" --quiet)

log() { echo "deploy: $*" >&2; }

# Who may do what, on which single resource (never the project). Columns:
# kind, resource, member, role. infra/infra_test.go checks this table
# against the calls the code makes.
BINDINGS=(
  "bucket       gs://$BUCKET  serviceAccount:cairn-api@$PROJECT.iam.gserviceaccount.com        projects/$PROJECT/roles/cairnBucketObjects"
  "bucket       gs://$BUCKET  serviceAccount:cairn-reaper@$PROJECT.iam.gserviceaccount.com     projects/$PROJECT/roles/cairnBucketObjects"
  "topic        cairn-hints   serviceAccount:cairn-api@$PROJECT.iam.gserviceaccount.com        roles/pubsub.publisher"
  "topic        cairn-hints   serviceAccount:cairn-reaper@$PROJECT.iam.gserviceaccount.com     roles/pubsub.publisher"
  "subscription cairn-hints   serviceAccount:cairn-api@$PROJECT.iam.gserviceaccount.com        roles/pubsub.subscriber"
  "secret       cairn-keys    serviceAccount:cairn-api@$PROJECT.iam.gserviceaccount.com        roles/secretmanager.secretAccessor"
  "run          cairn-api     allUsers                                                         roles/run.invoker"
  "run          cairn-reaper  serviceAccount:cairn-scheduler@$PROJECT.iam.gserviceaccount.com  roles/run.invoker"
)

bind() { # KIND: apply the table's bindings of that kind
  local kind res member role
  for b in "${BINDINGS[@]}"; do
    read -r kind res member role <<<"$b"
    [[ $kind == "$1" ]] || continue
    case $kind in
      bucket)       "${G[@]}" storage buckets add-iam-policy-binding "$res" --member "$member" --role "$role" ;;
      topic)        "${G[@]}" pubsub topics add-iam-policy-binding "$res" --member "$member" --role "$role" ;;
      subscription) "${G[@]}" pubsub subscriptions add-iam-policy-binding "$res" --member "$member" --role "$role" ;;
      secret)       "${G[@]}" secrets add-iam-policy-binding "$res" --member "$member" --role "$role" ;;
      run)          "${G[@]}" run services add-iam-policy-binding "$res" --region "$REGION" --member "$member" --role "$role" ;;
    esac >/dev/null
  done
}

# render FILE: the file with ${PROJECT} ${REGION} ${BUCKET} ${IMAGE} ${REAPER_URL} filled in.
render() {
  sed -e "s|\${PROJECT}|$PROJECT|g" -e "s|\${REGION}|$REGION|g" -e "s|\${BUCKET}|$BUCKET|g" \
      -e "s|\${IMAGE}|$IMAGE|g" -e "s|\${REAPER_URL}|${REAPER_URL:-}|g" "$1"
}

api() { # METHOD URL [BODY-FILE]
  local args=(-sSf -X "$1" -H "Authorization: Bearer $(gcloud auth print-access-token)" -H "Content-Type: application/json")
  [[ $# -ge 3 ]] && args+=(--data-binary "@$3")
  curl "${args[@]}" "$2"
}

exists() { "$@" >/dev/null 2>&1; }

log "enabling APIs"
"${G[@]}" services enable run.googleapis.com storage.googleapis.com pubsub.googleapis.com \
  cloudscheduler.googleapis.com secretmanager.googleapis.com iam.googleapis.com

log "service accounts"
for sa in cairn-api cairn-reaper cairn-scheduler; do
  exists "${G[@]}" iam service-accounts describe "$sa@$PROJECT.iam.gserviceaccount.com" ||
    "${G[@]}" iam service-accounts create "$sa" --display-name "$sa"
done

log "custom role cairnBucketObjects"
if exists "${G[@]}" iam roles describe cairnBucketObjects; then
  "${G[@]}" iam roles update cairnBucketObjects --file "$HERE/role-bucket.yaml" >/dev/null
else
  "${G[@]}" iam roles create cairnBucketObjects --file "$HERE/role-bucket.yaml" >/dev/null
fi

log "bucket gs://$BUCKET (no versioning; audit/ expires)"
exists "${G[@]}" storage buckets describe "gs://$BUCKET" ||
  "${G[@]}" storage buckets create "gs://$BUCKET" --location "$REGION" \
    --uniform-bucket-level-access --public-access-prevention
"${G[@]}" storage buckets update "gs://$BUCKET" --no-versioning --lifecycle-file "$HERE/bucket-lifecycle.json"
bind bucket

log "Pub/Sub topic and subscription cairn-hints"
exists "${G[@]}" pubsub topics describe cairn-hints || "${G[@]}" pubsub topics create cairn-hints
# Hints are worthless when old: the shortest retention Pub/Sub allows.
exists "${G[@]}" pubsub subscriptions describe cairn-hints ||
  "${G[@]}" pubsub subscriptions create cairn-hints --topic cairn-hints \
    --ack-deadline 10 --message-retention-duration 10m --expiration-period never
bind topic
bind subscription

log "secret cairn-keys (CAIRN_KEYS: id:scopes:sha256hex,…)"
if ! exists "${G[@]}" secrets describe cairn-keys; then
  : "${CAIRN_KEYS:?the secret cairn-keys does not exist yet: set CAIRN_KEYS for its first version}"
  printf %s "$CAIRN_KEYS" | "${G[@]}" secrets create cairn-keys --data-file=-
elif [[ -n ${CAIRN_KEYS:-} ]]; then
  printf %s "$CAIRN_KEYS" | "${G[@]}" secrets versions add cairn-keys --data-file=-
fi
bind secret

deploy_service() { # NAME FILE
  local tmp
  tmp=$(mktemp)
  render "$2" >"$tmp"
  log "Cloud Run service $1"
  api PATCH "$RUN_API/services/$1?allowMissing=true" "$tmp" >/dev/null
  rm -f "$tmp"
  # Wait for the new revision to serve.
  for _ in $(seq 60); do
    [[ $(api GET "$RUN_API/services/$1" | grep -o '"reconciling": *[a-z]*' | grep -o '[a-z]*$') == false ]] && return
    sleep 5
  done
  log "service $1 still reconciling after 5 min"; return 1
}

deploy_service cairn-api "$HERE/service-api.json"
deploy_service cairn-reaper "$HERE/service-reaper.json"

log "who may call the services"
# The API authenticates every request with CAIRN_KEYS: Cloud Run lets the
# traffic through. The reaper is private: only the scheduler's account
# (and the reaper checks the token again).
bind run

REAPER_URL=$("${G[@]}" run services describe cairn-reaper --region "$REGION" --format 'value(status.url)')
log "Cloud Scheduler job cairn-reaper → $REAPER_URL/reap"
job=$(mktemp)
render "$HERE/scheduler-reaper.json" >"$job"
if exists api GET "$SCHED_API/jobs/cairn-reaper"; then
  api PATCH "$SCHED_API/jobs/cairn-reaper" "$job" >/dev/null
else
  api POST "$SCHED_API/jobs" "$job" >/dev/null
fi
rm -f "$job"

API_URL=$("${G[@]}" run services describe cairn-api --region "$REGION" --format 'value(status.url)')
log "done: API at $API_URL/v1/api (docs: $API_URL/docs)"

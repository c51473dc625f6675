#!/usr/bin/env bash
# `make test-container`: builds the project's image from the Dockerfile with buildah on the local base image
# (make_base.sh), runs voicerag-serve inside it on a free loopback port with a token, checks /v1/health, an answered
# /v1/ask with the token and a 401 without it, then stops the server and removes the container.
# buildah's chroot isolation shares the host's network; pip inside the build reaches the sources the host's pip
# environment names (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_CERT: what of them is on this machine,
# folders and the CA bundle, is mounted read-only at the same path during the build).
# Layers are cached: a rerun rebuilds from the first changed step (the dependencies only when Makefile, setup.py or
# settings.ini change). Usage: tests/container/test_container.sh  (BASE_IMAGE, IMAGE, READY_TIMEOUT override)
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE_IMAGE=${BASE_IMAGE:-localhost/voicerag-base:bookworm}
IMAGE=${IMAGE:-localhost/voicerag:test}
READY_TIMEOUT=${READY_TIMEOUT:-600}           # seconds for the server to load the index and models
QUESTION='Who won Super Bowl 50?'            # one the default index answers
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
say() { echo "test-container: $*"; }
fail() { echo "test-container: FAILED: $*" >&2; exit 1; }

command -v buildah >/dev/null || fail "buildah is missing: $SUDO apt-get install buildah podman debootstrap"
$SUDO buildah inspect --type image "$BASE_IMAGE" >/dev/null 2>&1 \
  || fail "no base image $BASE_IMAGE: run tests/container/make_base.sh"

# ---- build ---------------------------------------------------------------------------------------------------------
local_path() {   # the folder or file a pip setting names when it is on this machine (a path or a file:// URL)
  local path=${1#file://}
  [ -e "$path" ] && echo "$path" || true
}
build_args=(--build-arg "BASE=$BASE_IMAGE" --build-arg "PIP_INDEX_URL=${PIP_INDEX_URL:-}"
            --build-arg "PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL:-}" --build-arg "PIP_FIND_LINKS=${PIP_FIND_LINKS:-}"
            --build-arg "PIP_CERT=${PIP_CERT:-}")
for var in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
  [ -n "${!var:-}" ] && build_args+=(--build-arg "$var=${!var}")
done
for setting in ${PIP_INDEX_URL:-} ${PIP_EXTRA_INDEX_URL:-} ${PIP_FIND_LINKS:-} ${PIP_CERT:-}; do
  path=$(local_path "$setting")
  [ -n "$path" ] && build_args+=(--volume "$path:$path:ro")
done
say "building $IMAGE on $BASE_IMAGE (the first build installs the dependencies: many minutes)"
start=$SECONDS
$SUDO buildah bud --isolation chroot --layers --force-rm --format docker "${build_args[@]}" -t "$IMAGE" . \
  || fail "the image did not build (the step that failed is printed above)"
say "built in $((SECONDS - start)) s"

# ---- run and check -------------------------------------------------------------------------------------------------
start=$SECONDS
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
url=http://127.0.0.1:$port
container=$($SUDO buildah from --name "voicerag-test-$$" "$IMAGE")
server=
cleanup() {
  if [ -n "$server" ]; then $SUDO kill -TERM -- "-$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  $SUDO buildah rm "$container" >/dev/null || echo "test-container: could not remove container $container" >&2
  rm -rf "$work"
}
trap cleanup EXIT
# the image's own command, on the free loopback port; in its own process group so that stopping it stops all of it
setsid $SUDO buildah run --isolation chroot --env "VOICERAG_API_TOKEN=$token" "$container" -- \
  .venv/bin/voicerag-serve --host 127.0.0.1 --port "$port" > "$work/server.log" 2>&1 &
server=$!
server_fail() { tail -20 "$work/server.log" >&2; fail "$*"; }

# GET/POST $url$2 with curl: the body in $work/body, the status on stdout (000: no connection)
request() {
  local method=$1 path=$2; shift 2
  curl -s -o "$work/body" -w '%{http_code}' -X "$method" --max-time 120 "$@" "$url$path" || true
}
json() { python3 -c "import json, sys; print(json.load(open('$work/body'))$1)"; }

say "waiting for $url/v1/ready (index and models loading)"
deadline=$((SECONDS + READY_TIMEOUT))
until [ "$(request GET /v1/ready)" = 200 ]; do
  kill -0 "$server" 2>/dev/null || server_fail "the server exited while loading"
  [ $SECONDS -lt $deadline ] || server_fail "not ready within $READY_TIMEOUT s"
  sleep 2
done
status=$(request GET /v1/health)
[ "$status" = 200 ] && [ "$(json "['status']")" = ok ] || server_fail "/v1/health answered $status: $(cat "$work/body")"
say "/v1/health: 200 ok"

ask=(-H 'Content-Type: application/json' --data "{\"question\": \"$QUESTION\"}")
status=$(request POST /v1/ask "${ask[@]}")
[ "$status" = 401 ] || server_fail "/v1/ask without the token answered $status, not 401: $(cat "$work/body")"
say "/v1/ask without the token: 401"

status=$(request POST /v1/ask "${ask[@]}" -H "Authorization: Bearer $token")
[ "$status" = 200 ] && [ "$(json "['state']")" = answered ] \
  || server_fail "/v1/ask with the token answered $status: $(head -c 600 "$work/body")"
say "/v1/ask with the token: 200 answered \"$(json "['answer']")\" to \"$QUESTION\""
say "all checks passed; run and checks took $((SECONDS - start)) s"

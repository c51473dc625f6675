#!/usr/bin/env bash
# The local base image for `make test-container`, for machines where no registry can be reached: Debian bookworm
# (minbase) with its python3 (3.11) and venv, made by debootstrap from Debian's packages and imported into the
# podman/buildah image store. Skipped when the image exists. Usage: tests/container/make_base.sh [IMAGE]
set -euo pipefail
IMAGE=${1:-${BASE_IMAGE:-localhost/voicerag-base:bookworm}}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
say() { echo "make_base: $*"; }
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

for tool in debootstrap podman; do
  command -v $tool >/dev/null || { say "$tool is missing: $SUDO apt-get install debootstrap podman" >&2; exit 1; }
done
if $SUDO podman image exists "$IMAGE"; then say "$IMAGE exists, nothing to do"; exit 0; fi

root=$(mktemp -d /var/tmp/voicerag-base.XXXXXX)
trap '$SUDO rm -rf "$root"' EXIT
start=$SECONDS
say "debootstrap bookworm into $root (from $MIRROR)"
$SUDO debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" "$MIRROR" \
  > "$root.log" 2>&1 || { tail -20 "$root.log" >&2; say "debootstrap failed (log: $root.log)" >&2; exit 1; }
rm -f "$root.log"
$SUDO rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
say "importing it as $IMAGE"
$SUDO tar -C "$root" -c . | $SUDO podman import --quiet --change 'CMD ["python3"]' - "$IMAGE" >/dev/null
say "$IMAGE made in $((SECONDS - start)) s ($($SUDO podman image inspect --format '{{.Size}}' "$IMAGE") bytes)"

#!/usr/bin/env bash
# Builds every Attesta image on the local engine, reusing cached layers:
#   deploy/build-images.sh [target ...]     # default: all; tags attesta/<target>:${ATTESTA_IMAGE_TAG:-dev}
# Steps: the Debian base (deploy/base/build-base.sh, skipped when BASE_IMAGE is set, e.g.
# BASE_IMAGE=debian:bookworm where a registry answers), the wheelhouse (deploy/wheelhouse.sh),
# the Kafka jars (the local path's Maven fetch), then `docker build --target` per image.
# Uses Debian's docker client (/usr/bin/docker) with BuildKit: it matches the Debian engine, and
# a newer client without the buildx plugin cannot use BuildKit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DOCKER="${DOCKER:-/usr/bin/docker}"
[ -x "$DOCKER" ] || DOCKER=docker
export DOCKER DOCKER_BUILDKIT=1
tag="${ATTESTA_IMAGE_TAG:-dev}"
say() { printf '[images] %s\n' "$*"; }
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(kafka postgres redis chroma gateway answer evidence collector retrieval classifier tools)
t0=$SECONDS

base="${BASE_IMAGE:-}"
if [ -z "$base" ]; then
  deploy/base/build-base.sh
  base="${ATTESTA_BASE_TAG:-attesta/bookworm:base}"
fi
deploy/wheelhouse.sh
libs=$(scripts/infra kafka-libs)
rm -rf deploy/.kafka-libs; mkdir -p deploy/.kafka-libs
cp -l "$libs"/*.jar deploy/.kafka-libs/ 2>/dev/null || cp "$libs"/*.jar deploy/.kafka-libs/

for t in "${targets[@]}"; do
  t1=$SECONDS
  say "building attesta/$t:$tag"
  "$DOCKER" build --quiet -f deploy/docker/Dockerfile --build-arg BASE_IMAGE="$base" \
    --target "$t" -t "attesta/$t:$tag" . >/dev/null \
    || { say "build of $t failed (re-run without --quiet: $DOCKER build -f deploy/docker/Dockerfile --target $t .)"; exit 1; }
  say "attesta/$t:$tag built in $((SECONDS - t1))s, $("$DOCKER" image inspect -f '{{.Size}}' "attesta/$t:$tag" | awk '{printf "%.0f MB", $1/1e6}')"
done
say "all images built in $((SECONDS - t0))s"

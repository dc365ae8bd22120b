#!/usr/bin/env bash
# Builds every Attesta image on the local engine, reusing cached layers:
#   deploy/build-images.sh [target ...]     # default: all but llm; tags attesta/<target>:${ATTESTA_IMAGE_TAG:-dev}
#   deploy/build-images.sh llm              # the local LLM with its model (compose profile `llm`)
# Steps: the Debian base (deploy/base/build-base.sh, skipped when BASE_IMAGE is set, e.g.
# BASE_IMAGE=debian:bookworm where a registry answers), the wheelhouse (deploy/wheelhouse.sh),
# served on 127.0.0.1:${ATTESTA_WHEELS_PORT:-28765} while the builds run (as build context, each
# concurrent build would copy its 6 GB), deploy/.build (uv, the runtime lock, venv-install.sh and
# the wheelhouse's address: what the Dockerfile's RUNs mount),
# the Kafka jars (the local path's Maven fetch), then `docker build --target` per image, all at
# once: BuildKit builds a stage several targets share (the ML layer) once, and the small images
# build while it does. ATTESTA_BUILD_JOBS caps how many builds run at a time (default: all).
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
jobs="${ATTESTA_BUILD_JOBS:-${#targets[@]}}"
t0=$SECONDS

base="${BASE_IMAGE:-}"
if [ -z "$base" ]; then
  t1=$SECONDS; deploy/base/build-base.sh; say "base image: $((SECONDS - t1))s"
  base="${ATTESTA_BASE_TAG:-attesta/bookworm:base}"
fi
# The llm target (not built by default: its model is 1.1 GB) also needs the model's part wheels.
case " ${targets[*]} " in *" llm "*) export ATTESTA_WHEELHOUSE_LLM_MODEL=1 ;; esac
t1=$SECONDS; deploy/wheelhouse.sh; say "wheelhouse: $((SECONDS - t1))s"
# The uv scripts/install.sh pins (a static binary), for the builds' RUNs only.
uv_bin=$(command -v uv) || { say "uv not found: run scripts/install.sh first"; exit 1; }
if ! head -c 4 "$uv_bin" | grep -q ELF; then
  # pyenv (and the like) put a shell shim first on PATH: ask it where the binary is.
  uv_bin=$(pyenv which uv) || { say "$uv_bin is not the uv binary, and pyenv does not know it"; exit 1; }
fi
rm -rf deploy/.build; mkdir -p deploy/.build .state
cp -l "$uv_bin" deploy/.build/uv 2>/dev/null || cp "$uv_bin" deploy/.build/uv
cp requirements/runtime.txt deploy/.build/runtime.txt
cp requirements/llm-model.txt deploy/.build/llm-model.txt
cp deploy/docker/venv-install.sh deploy/.build/venv-install
# A fixed address: it is part of the layers' cache key (a changed port would rebuild them).
port="${ATTESTA_WHEELS_PORT:-28765}"
echo "http://127.0.0.1:$port/" >deploy/.build/wheels-url
python3 -m http.server --bind 127.0.0.1 --directory deploy/.wheelhouse "$port" >.state/wheels-http.log 2>&1 &
http_pid=$!
trap 'kill "$http_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/', timeout=2)" 2>/dev/null && break
  kill -0 "$http_pid" 2>/dev/null || { say "could not serve the wheelhouse on 127.0.0.1:$port (ATTESTA_WHEELS_PORT):"; cat .state/wheels-http.log; exit 1; }
  sleep 0.2
done
libs=$(scripts/infra kafka-libs)
rm -rf deploy/.kafka-libs; mkdir -p deploy/.kafka-libs
cp -l "$libs"/*.jar deploy/.kafka-libs/ 2>/dev/null || cp "$libs"/*.jar deploy/.kafka-libs/

logs=.state/images; mkdir -p "$logs"
build() { # target
  local t=$1 t1=$SECONDS
  if nice -n 10 "$DOCKER" build --progress=plain --network host -f deploy/docker/Dockerfile --build-arg BASE_IMAGE="$base" \
      --target "$t" -t "attesta/$t:$tag" . >"$logs/$t.log" 2>&1; then
    say "attesta/$t:$tag built in $((SECONDS - t1))s, $("$DOCKER" image inspect -f '{{.Size}}' "attesta/$t:$tag" | awk '{printf "%.0f MB", $1/1e6}')"
  else
    say "build of $t failed after $((SECONDS - t1))s; the end of $logs/$t.log:"; tail -30 "$logs/$t.log"; return 1
  fi
}
pids=() failed=0
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | grep -cvx "$http_pid")" -ge "$jobs" ]; do wait -n || failed=1; done
  build "$t" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { say "some builds failed"; exit 1; }
say "all images built in $((SECONDS - t0))s"

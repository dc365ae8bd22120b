#!/usr/bin/env bash
# Builds the Debian bookworm base image `attesta/bookworm:<tag>` from Debian's packages with
# debootstrap + `docker import`, for machines that reach Debian's archive but no image registry.
#
#   deploy/base/build-base.sh            # idempotent: does nothing if the image already exists
#   ATTESTA_BASE_REBUILD=1 deploy/base/build-base.sh   # rebuild even so
#
# Reproducible by recorded versions: the archive has no fixed dates (snapshots are not reachable
# here), so the exact package set is written to deploy/base/packages.lock (`name=version`, one a
# line). A rebuild whose versions differ from the lock fails, listing the differences, unless
# ATTESTA_BASE_RELOCK=1 (then the lock is rewritten and the diff shows in review). Where a
# snapshot archive IS reachable, ATTESTA_DEBIAN_MIRROR=<snapshot URL for a date> pins it by date.
# The mirror defaults to the host's own apt source, so no archive host is named here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
here="$PWD"
DOCKER="${DOCKER:-/usr/bin/docker}"
tag="${ATTESTA_BASE_TAG:-attesta/bookworm:base}"
suite=bookworm
say() { printf '[base] %s\n' "$*"; }

if [ "${ATTESTA_BASE_REBUILD:-0}" != 1 ] && "$DOCKER" image inspect "$tag" >/dev/null 2>&1; then
  say "$tag exists (ATTESTA_BASE_REBUILD=1 to rebuild)"; exit 0
fi
command -v debootstrap >/dev/null || { say "installing debootstrap"; apt-get install -y -qq debootstrap >/dev/null; }

mirror="${ATTESTA_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
  [ -n "$mirror" ] || mirror=$(awk '$1=="deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
fi
[ -n "$mirror" ] || { say "no Debian mirror found in the host's apt sources; set ATTESTA_DEBIAN_MIRROR"; exit 1; }

root=$(mktemp -d /var/tmp/attesta-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
# minbase: dpkg, apt and essentials only; ca-certificates so apt/HTTPS work inside if wanted.
say "debootstrap $suite (minbase) into $root"
nice -n 10 debootstrap --variant=minbase --include=ca-certificates "$suite" "$root" "$mirror" >"$root.log" 2>&1 \
  || { tail -20 "$root.log"; exit 1; }
rm -f "$root.log"
# Apt inside the image uses the same mirror over plain HTTP (it answers from containers), and
# keeps no package lists or caches in the layer.
printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$suite" "$mirror" "$suite" >"$root/etc/apt/sources.list"
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/90attesta-minimal"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb

chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort >"$root/../attesta-base.versions"
versions="$root/../attesta-base.versions"
if [ -s packages.lock ] && [ "${ATTESTA_BASE_RELOCK:-0}" != 1 ]; then
  if ! diff -u packages.lock "$versions" >/dev/null; then
    say "package versions differ from deploy/base/packages.lock (ATTESTA_BASE_RELOCK=1 to accept):"
    diff -u packages.lock "$versions" | sed -n '3,60p'; rm -f "$versions"; exit 1
  fi
else
  cp "$versions" packages.lock; say "wrote deploy/base/packages.lock ($(wc -l <packages.lock) packages)"
fi
rm -f "$versions"

say "docker import -> $tag"
tar -C "$root" --numeric-owner -c . | "$DOCKER" import \
  -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["bash"]' - "$tag" >/dev/null
say "done: $("$DOCKER" image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')"

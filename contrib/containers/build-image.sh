#!/usr/bin/env bash
# Builds a plain Debian root file system for the container tests: nothing of
# Tandem, MPI or Slurm in it, only what a user's image would hold (python3
# and a framework). Cached outside any build directory, so reruns, other
# worktrees and CI reuse it; a half-built image is never trusted (the
# .complete marker is written last).
#
#   contrib/containers/build-image.sh bookworm-torch   # Debian 12, python3-torch 1.13 (~1.6 GB, minutes)
#   contrib/containers/build-image.sh bullseye         # Debian 11 (glibc 2.31), python3 + numpy
#   contrib/containers/build-image.sh --path NAME      # prints where NAME is (built or not)
#
# Images live in $TANDEM_IMAGES (default /opt/tandem-deps/images/NAME).
set -euo pipefail

images=${TANDEM_IMAGES:-${TANDEM_DEPS:-/opt/tandem-deps}/images}
mirror=${TANDEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "${1:-}" = "--path" ]; then echo "$images/$2"; exit 0; fi
name=${1:?usage: build-image.sh bookworm-torch|bullseye}

case "$name" in
  bookworm-torch) suite=bookworm; include=python3,python3-numpy,python3-torch ;;
  bullseye) suite=bullseye; include=python3,python3-numpy ;;
  *) echo "build-image: unknown image '$name' (known: bookworm-torch, bullseye)" >&2; exit 2 ;;
esac

dest=$images/$name
if [ -f "$dest/.complete" ]; then exit 0; fi
command -v debootstrap >/dev/null || {
  echo "build-image: debootstrap is missing (contrib/install-deps.sh installs it)" >&2; exit 1; }

mkdir -p "$images"
# One builder at a time per image (CI and a developer, two worktrees).
exec 9>"$images/.$name.lock"
flock 9
if [ -f "$dest/.complete" ]; then exit 0; fi

tmp="$images/.$name.tmp"
# debootstrap mounts /proc and /sys in the new root; a failed or killed run
# must not leave them mounted.
unmount_tmp() { for m in proc sys dev/pts; do umount -l "$tmp/$m" 2>/dev/null || true; done; }
trap unmount_tmp EXIT
unmount_tmp
rm -rf "$tmp"
echo "build-image: debootstrap $suite ($include) into $dest"
start=$(date +%s)
debootstrap --variant=minbase --include="$include" "$suite" "$tmp" "$mirror" >"$images/.$name.log" 2>&1 || {
  echo "build-image: debootstrap failed; last lines of $images/.$name.log:" >&2
  tail -n 20 "$images/.$name.log" >&2
  exit 1
}
# No package caches in the image; a mount point for the site's Tandem tree is
# not made on purpose: the runtimes must create or bind it themselves.
rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*
rm -rf "$dest"
mv "$tmp" "$dest"
echo "$suite $(date -u +%FT%TZ) $(( $(date +%s) - start ))s" >"$dest/.complete"
echo "build-image: $name ready in $(( $(date +%s) - start )) s ($(du -sh "$dest" | cut -f1))"

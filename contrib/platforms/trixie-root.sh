#!/usr/bin/env bash
# Debian 13 (trixie) as a second platform, from Debian's archive only: a root
# file system made once with debootstrap, holding what Tandem builds and
# tests with there (Slurm 24.11, PMIx 5, Open MPI 5, Python 3.13, torch 2.6)
# and Apptainer, which only Debian unstable packages (its dependencies are
# trixie's). Cached outside any build directory like the container images
# (contrib/containers/build-image.sh); a half-built root is never trusted
# (the .complete marker is written last).
#
#   contrib/platforms/trixie-root.sh build            # make it once (~1 GB of packages, minutes)
#   contrib/platforms/trixie-root.sh enter [--bind DIR]... [--] CMD...
#   contrib/platforms/trixie-root.sh --path           # prints where it is (built or not)
#
# `enter` runs CMD in the root in a private mount namespace, the host's /proc,
# /sys, /dev, /tmp, this tree and every --bind DIR mounted at their own paths,
# after pivot_root: Apptainer refuses a plain chroot ("weak chrooted
# environment"), and building needs the tree where the host has it.
#
# The root lives in $TANDEM_ROOTS/trixie (default /opt/tandem-deps/roots).
set -euo pipefail

roots=${TANDEM_ROOTS:-${TANDEM_DEPS:-/opt/tandem-deps}/roots}
mirror=${TANDEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$roots/trixie
here=$(cd "$(dirname "$0")/../.." && pwd)

# What the project builds, tests and compares with on Debian 13; the same
# roles as contrib/install-deps.sh's list, less what only Debian 12's host
# runs (packaging, the other container runtimes, the format check).
packages=(
  build-essential pkg-config meson ninja-build libhwloc-dev libpmix-dev libslurm-dev
  libgtest-dev libgmock-dev
  slurmctld slurmd slurm-client munge hwloc iproute2 util-linux procps
  openmpi-bin libopenmpi-dev python3 python3-pytest python3-numpy python3-torch
  python3-filelock python3-psutil
  # the manual pages' lint (groff)
  groff-base
  # Apptainer mounts SIF files with squashfuse when it may not mount them
  # itself (user namespace, no setuid)
  squashfuse fuse3
)

die() { echo "trixie-root: $*" >&2; exit 1; }

# The marker names what the root was made with; a list changed since (a
# newer checkout) is installed into the cached root in place, never over a
# root another worktree may be inside (apt only adds).
stamp() { echo "packages: ${packages[*]} apptainer/sid"; }

# apt inside a root: the mounts it needs, removed again whatever happens.
mounted=""
unmount_all() {
  [ -n "$mounted" ] || return 0
  for m in dev/pts dev sys proc; do umount -l "$mounted/$m" 2>/dev/null || true; done
  mounted=""
}
trap unmount_all EXIT
install_into() {
  local dir=$1 log=$2
  for m in proc sys dev dev/pts; do mount --bind "/$m" "$dir/$m"; done
  mounted=$dir
  in_dir() { chroot "$dir" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@" >>"$log" 2>&1; }
  echo "trixie-root: apt-get install ${packages[*]} apptainer/sid (log $log)"
  { in_dir apt-get update &&
    in_dir apt-get install -y --no-install-recommends "${packages[@]}" &&
    in_dir apt-get install -y --no-install-recommends apptainer/sid; } || {
    echo "trixie-root: apt-get failed in $dir; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  }
  # Only apptainer may come from unstable: its dependencies resolve on trixie
  # (libc6 >= 2.38 and the rest), and a package pulled from unstable would
  # make this a root of neither release.
  local foreign
  foreign=$(chroot "$dir" apt list --installed 2>/dev/null | awk -F'[/ ]' 'NR > 1 {
      n = split($2, s, ","); ok = 0
      for (i = 1; i <= n; i++) if (s[i] == "stable" || s[i] == "trixie") ok = 1
      if (!ok && $1 != "apptainer") print $1 "/" $2 " " $3 }')
  [ -z "$foreign" ] || die "these packages in $dir come from outside trixie (expected only apptainer from unstable): $foreign"
  rm -f "$dir/var/cache/apt/archives/"*.deb
  unmount_all
}

build() {
  if [ -f "$root/.complete" ] && grep -qxF "$(stamp)" "$root/.complete"; then
    echo "trixie-root: $root is ready ($(head -n 1 "$root/.complete"))"; return 0; fi
  [ "$(id -u)" -eq 0 ] || die "building the root needs root (debootstrap, chroot); found uid $(id -u)"
  command -v debootstrap >/dev/null || die "debootstrap is missing (contrib/install-deps.sh installs it)"
  mkdir -p "$roots"
  # One builder at a time (CI and a developer, two worktrees).
  exec 9>"$roots/.trixie.lock"
  flock 9
  local log=$roots/.trixie.log start
  start=$(date +%s)
  if [ -f "$root/.complete" ]; then
    grep -qxF "$(stamp)" "$root/.complete" && return 0
    echo "trixie-root: $root was made with other packages; adding this checkout's"
    : >"$log"
    install_into "$root" "$log"
    { head -n 1 "$root/.complete"; stamp; } >"$root/.complete.new"
    mv "$root/.complete.new" "$root/.complete"
    echo "trixie-root: updated in $(( $(date +%s) - start )) s"
    return 0
  fi
  local tmp=$roots/.trixie.tmp
  # A run killed while apt had the file systems mounted.
  for m in dev/pts dev sys proc; do umount -l "$tmp/$m" 2>/dev/null || true; done
  rm -rf "$tmp"
  echo "trixie-root: debootstrap trixie (minbase) into $tmp, log $log"
  debootstrap --variant=minbase trixie "$tmp" "$mirror" >"$log" 2>&1 || {
    echo "trixie-root: debootstrap failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  }
  # Packages install their daemons' start scripts; none may start here.
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
  chmod +x "$tmp/usr/sbin/policy-rc.d"
  # Unstable only for what trixie lacks, taken by name: everything else,
  # apptainer's dependencies included, stays trixie's.
  cat >"$tmp/etc/apt/sources.list" <<SRC
deb $mirror trixie main
deb $mirror sid main
SRC
  cat >"$tmp/etc/apt/preferences.d/sid" <<'PIN'
Package: *
Pin: release n=sid
Pin-Priority: 100
PIN
  # Unstable's Release file is only valid a week; a mirror that is a frozen
  # copy serves it expired, and apt would then refuse all of unstable.
  echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99valid-until"
  install_into "$tmp" "$log"
  rm -rf "$root"
  mv "$tmp" "$root"
  { echo "trixie $(date -u +%FT%TZ) $(( $(date +%s) - start ))s"; stamp; } >"$root/.complete"
  echo "trixie-root: ready in $(( $(date +%s) - start )) s ($(du -sh "$root" | cut -f1))"
}

enter() {
  [ -f "$root/.complete" ] || die "no Debian 13 root at $root; make it with: contrib/platforms/trixie-root.sh build"
  binds=(/proc /sys /dev /tmp "$here")
  while [ $# -gt 0 ]; do
    case "$1" in
      --bind) [ -d "${2:-}" ] || die "--bind expects an existing folder, found '${2:-}'"; binds+=("$(cd "$2" && pwd)"); shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || set -- /bin/bash
  # The namespace's mounts: the root bound onto itself (pivot_root needs a
  # mount point), each folder at its own path, then the old root dropped so
  # that nothing of Debian 12 is reachable but what was bound.
  exec unshare -m --propagation private /bin/sh -euc '
    root=$1; shift; n=$1; shift
    mount --bind "$root" "$root"
    i=0
    while [ $i -lt $n ]; do
      d=$1; shift; i=$((i + 1))
      mkdir -p "$root$d"
      mount --rbind "$d" "$root$d"
    done
    mkdir -p "$root/.host"
    cd "$root"
    pivot_root . .host
    exec /usr/sbin/chroot . /bin/sh -c "umount -l /.host && cd \"\$0\" && exec \"\$@\"" "$PWD_IN" "$@"
  ' sh "$root" "${#binds[@]}" "${binds[@]}" "$@"
}

case "${1:-}" in
  --path) echo "$root" ;;
  build) build ;;
  enter) shift; export PWD_IN; PWD_IN=$(pwd); enter "$@" ;;
  *) echo "usage: trixie-root.sh build | enter [--bind DIR]... [--] CMD... | --path" >&2; exit 2 ;;
esac

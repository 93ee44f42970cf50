#!/usr/bin/env bash
# The one command that runs every Tandem test on a fresh Debian 12 machine:
# installs what is missing, builds with warnings as errors, runs the unit
# tests, starts the local Slurm cluster, runs the end-to-end and Python tests
# under real srun, and stops the cluster leaving nothing behind. The
# structure and lint checks (contrib/check-layers.sh) run before the tests.
# The summary lists each stage with the seconds it took.
#
#   contrib/test.sh            # everything (what CI runs)
#   contrib/test.sh --quick    # structure checks, build, one unit pass: no
#                              # images, no cluster, no packages
#   BUILD=dir contrib/test.sh  # another build directory (default: build)
set -euo pipefail

quick=0
case "${1:-}" in
  "") ;;
  --quick) quick=1 ;;
  *) echo "test.sh: unknown argument '$1' (usage: contrib/test.sh [--quick])" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
cd "$root"

# Horovod's examples and elastic mains are read from a Horovod checkout at
# test time, never copied; this project's machines keep a fetched mirror here.
horovod_mirror=/work/.mirror/horovod+horovod/repo
if [ -z "${TANDEM_HOROVOD_CHECKOUT:-}" ] && [ -d "$horovod_mirror" ]; then
  export TANDEM_HOROVOD_CHECKOUT=$horovod_mirror
fi

timings=()
timed() {  # timed NAME CMD...: runs CMD, notes how long it took, keeps its status
  local name=$1 start=$SECONDS rc=0; shift
  "$@" || rc=$?
  timings+=("$name $((SECONDS - start))")
  return "$rc"
}
print_timings() {
  echo "== stage times (s)"
  local t
  for t in "${timings[@]}"; do printf '  %-20s %6s\n' ${t}; done
}

timed deps "$root/contrib/install-deps.sh"

# The container tests' images (debootstrap; cached in /opt/tandem-deps/images,
# so only the first run on a machine pays, minutes). Mostly waiting on the
# archive and on dpkg, so they are made while the build and the unit tests
# run; the end-to-end stage waits for them. A failed build leaves those tests
# skipped, saying why, and is counted.
images_pid=""
if [ "$quick" -eq 0 ]; then
  images_log=$(mktemp /tmp/tandem-images.XXXXXX)
  (
    rc=0
    for image in bullseye bookworm-torch; do
      "$root/contrib/containers/build-image.sh" "$image" || rc=1
    done
    exit "$rc"
  ) >"$images_log" 2>&1 &
  images_pid=$!
fi

echo "== build ($build)"
# The framework venvs (torch 2.x, TensorFlow) and the NCCL header location.
# shellcheck disable=SC2207
env_options=($("$root/contrib/install-python-envs.sh" --print))
if [ ! -f "$build/build.ninja" ]; then
  timed setup meson setup "$build" -Dwerror=true -Dcuda=enabled -Dtests=enabled "${env_options[@]}"
else
  meson configure "$build" "${env_options[@]}"
fi
timed build ninja -C "$build"

failed=0
stage() {  # stage NAME CMD...: runs one stage; a failure is counted, later stages still run
  local name=$1; shift
  echo "== $name"
  timed "$name" "$@" || { echo "== $name: FAILED"; failed=$((failed + 1)); }
}

stage layers "$root/contrib/check-layers.sh"

stage unit meson test -C "$build" --print-errorlogs --suite unit

if [ "$quick" -eq 1 ]; then
  echo "== summary (quick: no images, cluster or packages)"
  print_timings
  /usr/bin/python3 "$root/contrib/test_summary.py" \
    "meson:$build/meson-logs/testlog.json" || failed=$((failed + 1))
  [ "$failed" -eq 0 ]
  exit
fi

# gpu (NCCL path): the unit suite again with CUDA and NCCL hidden from the
# loader, as on a CPU-only node (the ld.so cache would find them otherwise).
# What hiding them changes is the engine's loader and what the frontends are
# told about GPUs, so the C++ tests and the Python tests on Debian's torch
# run again; the framework venvs' suites (venv, tf-extra) run once: torch's
# and TensorFlow's CPU builds take the same path whether or not the engine
# found libcudart.
stage unit-without-cuda env TANDEM_CUDA_LIBRARY=/nonexistent/libcudart.so.13 \
  TANDEM_NCCL_LIBRARY=/nonexistent/libnccl.so.2 LD_LIBRARY_PATH= \
  meson test -C "$build" --print-errorlogs --suite unit --no-suite tf-extra --no-suite venv \
  --logbase testlog-without-cuda

wait_images() {
  local rc=0
  wait "$images_pid" || rc=$?
  cat "$images_log"; rm -f "$images_log"
  return "$rc"
}
stage images wait_images

# The Python end-to-end tests run once per framework interpreter (Debian's
# torch 1.13, the torch 2.x venv; the TensorFlow venv for TF tests).
# shellcheck disable=SC2207
e2e_pythons=($("$root/contrib/install-python-envs.sh" --print-pythons))
stage end-to-end /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs --durations=15 \
  --junitxml="$build/e2e-results.xml" --build-dir="$build" "${e2e_pythons[@]}" "$root/tests/e2e"

# What a site installs: the .deb from a clean clone of HEAD, installed, used
# (a cluster from the installed files, torch and TF training, the module,
# the man pages), removed and purged inside a throwaway mount namespace (the
# machine's /usr, /etc, /var never see it); the RPM built from a meson dist
# tarball and installed in a scratch --root. Both reuse ccache across runs.
package_stage() {  # package_stage NAME: contrib/package/test-NAME.sh, its log kept for the summary
  set -o pipefail
  "$root/contrib/package/test-$1.sh" 2>&1 | tee "$build/package-$1.log"
}
stage package-deb package_stage deb
stage package-rpm package_stage rpm

echo "== summary"
print_timings
/usr/bin/python3 "$root/contrib/test_summary.py" \
  "meson:$build/meson-logs/testlog.json" \
  "meson:$build/meson-logs/testlog-without-cuda.json" \
  "junit:$build/e2e-results.xml" \
  "checks:$build/package-deb.log" \
  "checks:$build/package-rpm.log" || failed=$((failed + 1))
[ "$failed" -eq 0 ]

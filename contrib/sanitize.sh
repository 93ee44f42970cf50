#!/usr/bin/env bash
# The C++ unit tests under the compilers' sanitizers, each kind in a build
# directory of its own (CONTRIBUTING.md, "Sanitizer runs"):
#
#   contrib/sanitize.sh asan   # AddressSanitizer + UndefinedBehaviorSanitizer
#                              # (+ LeakSanitizer): every C++ unit test and the
#                              # forked-process transport and runtime tests
#   contrib/sanitize.sh tsan   # ThreadSanitizer: the runtime, shared-memory
#                              # and TCP tests
#   BUILD=dir contrib/sanitize.sh asan   # another build directory
#                                        # (default: build-asan, build-tsan)
#   NINJA_JOBS=2 SANITIZE_JOBS=1 contrib/sanitize.sh tsan   # fewer jobs at
#                                        # once for the build and the tests
#
# The Python suites are left out: the interpreter and the frameworks are not
# built with the sanitizer, so their runtime would have to be preloaded into
# them and would report theirs. A sanitized engine keeps glibc's default
# symbol versions (engine/meson.build, "Loads in any image"). The first
# report ends the process that made it (halt_on_error), with its stack; the
# only suppressions are third-party frames, each with its reason
# (contrib/sanitize/lsan.supp). The summary gives the build's and the run's
# seconds.
set -euo pipefail

kind=${1:-}
case "$kind" in
  asan) sanitize=address,undefined; extra=() ;;
  # GCC warns (-Wtsan, an error under -Dwerror) that ThreadSanitizer does
  # not model std::atomic_thread_fence. The one fence (NodeSync::
  # wake_sleepers) orders accesses to a segment shared with other
  # processes, which ThreadSanitizer does not observe at all.
  tsan) sanitize=thread; extra=(-Dcpp_args=-Wno-tsan) ;;
  *) echo "sanitize.sh: expected 'asan' or 'tsan', got '${kind}' (usage: contrib/sanitize.sh asan|tsan)" >&2
     exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-$kind}
supp=$root/contrib/sanitize
cd "$root"

start=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
  # b_lundef=false: a sanitized shared library leaves the runtime's symbols
  # to the executable that loads it. Debug info for the reports' lines.
  meson setup "$build" -Db_sanitize="$sanitize" -Db_lundef=false -Dtests=enabled \
    -Dcuda=disabled -Dbuildtype=debugoptimized -Dwerror=true "${extra[@]}"
fi
ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"}
build_s=$((SECONDS - start))

# The tests to run: those whose command names a file of these folders, in
# the source or the build tree (a test's relative paths are the build
# directory's). The Python suites (tests/python) are not among them.
case "$kind" in
  asan) folders='tests/unit/ tests/build/' ;;
  tsan) folders='tests/unit/runtime/ tests/unit/shm/ tests/unit/tcp/' ;;
esac
mapfile -t tests < <(meson introspect "$build" --tests | FOLDERS="$folders" BUILD_DIR="$build" python3 -c '
import json, os, sys
build = os.path.realpath(os.environ["BUILD_DIR"])
folders = [os.path.join(top, f) for top in (build, os.getcwd()) for f in os.environ["FOLDERS"].split()]
for t in json.load(sys.stdin):
    cmd = [os.path.realpath(os.path.join(build, c)) for c in t["cmd"]]
    if any(c.startswith(f) for c in cmd for f in folders):
        print(t["name"])
')
if [ "${#tests[@]}" -eq 0 ]; then
  echo "sanitize.sh: no tests found under $folders in $build (was it set up with -Dtests=enabled?)" >&2
  exit 1
fi

common=halt_on_error=1:print_summary=1
export ASAN_OPTIONS=$common:abort_on_error=1:detect_leaks=1:strict_init_order=1
export UBSAN_OPTIONS=$common:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=$common:abort_on_error=1:second_deadlock_stack=1
# hwloc's PCI discovery plugin leaves allocations at exit, and hwloc has
# unloaded the plugin by then, so no suppression can name its frames: it is
# left out of the sanitized runs (the planner's tests read topology XMLs).
export HWLOC_PLUGINS_BLACKLIST=hwloc_pci
# Sanitized code runs several times slower; the tests' own limits scale.
multiplier=$([ "$kind" = tsan ] && echo 5 || echo 3)

start=$SECONDS
rc=0
meson test -C "$build" --print-errorlogs --num-processes "${SANITIZE_JOBS:-2}" \
  --timeout-multiplier "$multiplier" --logbase "testlog-$kind" "${tests[@]}" || rc=$?
run_s=$((SECONDS - start))
echo "== sanitize $kind: ${#tests[@]} tests; build ${build_s} s, run ${run_s} s (log: $build/meson-logs/testlog-$kind.txt)"
exit "$rc"

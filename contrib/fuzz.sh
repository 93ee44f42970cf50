#!/usr/bin/env bash
# Runs the fuzz targets of tests/fuzz under libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer (CONTRIBUTING.md, "Fuzzing"):
#
#   contrib/fuzz.sh                      # every target, 300 s each
#   contrib/fuzz.sh store_server 600     # one target, 600 s
#   contrib/fuzz.sh all 60               # every target, 60 s each
#   BUILD=dir contrib/fuzz.sh ...        # another build directory (default build-fuzz)
#
# The build is clang's (Debian's clang and its libFuzzer runtime,
# libclang-rt-14-dev, installed when missing), in a directory of its own,
# with -Dfuzz=true: only the targets and what they link are built. Each run
# starts from the committed corpus (tests/fuzz/corpus/<target>) and keeps
# what it finds new in build-fuzz/corpus/<target>, so the committed one
# stays small; a crash input lands in build-fuzz/crashes/<target>/. The
# summary line of each target gives its executions, coverage and crashes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build-fuzz}
targets_all=(store_server store_client elastic_service tcp_wire cycle_message plugin_options settings)
target=${1:-all}
seconds=${2:-300}
case "$target" in
  all) targets=("${targets_all[@]}") ;;
  *)
    if [[ " ${targets_all[*]} " != *" $target "* ]]; then
      echo "fuzz.sh: expected a target (${targets_all[*]}) or 'all', got '$target'" >&2
      exit 2
    fi
    targets=("$target") ;;
esac
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: expected a whole number of seconds per target, got '$seconds'" >&2
  exit 2
fi

# clang and its fuzzer runtime, as contrib/install-deps.sh installs packages.
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz.sh: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cd "$root"
if [ ! -f "$build/build.ninja" ]; then
  # fuzzer-no-link: the engine's code gets the coverage counters libFuzzer
  # steers by; the targets themselves link libFuzzer (tests/fuzz/meson.build).
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=disabled -Dcuda=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dcpp_args=-fsanitize=fuzzer-no-link -Dc_args=-fsanitize=fuzzer-no-link
fi
binaries=()
for t in "${targets[@]}"; do binaries+=("tests/fuzz/${t}_fuzz"); done
# A stale binary must not pass for a failed build: the build's own status.
ninja -C "$build" "${binaries[@]}"

# A finding ends the run with its report (UBSan's included) and the input.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$root/contrib/sanitize/lsan.supp:print_suppressions=0

rc=0
summary=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  crashes=$build/crashes/$t
  log=$build/fuzz-$t.log
  mkdir -p "$corpus" "$crashes"
  echo "== fuzz $t: ${seconds} s (log: $log)"
  # -close_fd_mask=2: the servers' refusals go to stderr at every run;
  # libFuzzer and the sanitizers keep a copy of it for their reports.
  # -rss_limit_mb: an input that makes a parser allocate what its length
  # does not justify is a finding.
  t_rc=0
  "$build/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
    -close_fd_mask=2 -rss_limit_mb=2048 -timeout=25 -artifact_prefix="$crashes/" \
    "$corpus" "$root/tests/fuzz/corpus/$t" >"$log" 2>&1 || t_rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  found=$(find "$crashes" -type f | wc -l)
  line="$t: ${seconds} s, ${execs:-?} executions, cov ${cov:-?}, ft ${ft:-?}, corpus $(find "$corpus" -type f | wc -l) files, crash inputs $found, rc $t_rc"
  echo "$line"
  summary+=("$line")
  if [ "$t_rc" -ne 0 ]; then
    rc=1
    grep -m1 -A30 'ERROR\|runtime error\|fuzz target:' "$log" >&2 || tail -30 "$log" >&2
  fi
done
echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
exit "$rc"

#!/usr/bin/env bash
# Autotune against a fixed-setting sweep, in one run (docs/runtime.md,
# "Autotune"): the step benchmark (tandem-step-bench, a training step's
# gradients through the runtime) with every combination of a grid of fusion
# thresholds and cycle times, the response cache on, and the defaults with
# the cache off; then the same benchmark with TANDEM_AUTOTUNE=1, whose
# warm-up lasts until the tuner settles and whose timed steps run with the
# values it kept. Prints one line per run and a table: the sweep's best,
# the defaults, and the settled run, as throughput (bytes per step over the
# median step time) and as a ratio to the sweep's best.
#
#   contrib/bench/autotune.sh [BUILD_DIR]        (default: build)
#
# NP (default 2), PATTERN (tandem-step-bench's, default "-s 100 -l 10"),
# STEPS (timed steps per run, default 100), FUSION_MIB and CYCLE_MS (the
# grid), AUTOTUNE_ENV (extra variables for the tuned run, e.g.
# TANDEM_AUTOTUNE_STEPS_PER_SAMPLE=5).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
for x in tandem-run tandem-step-bench; do
  [ -x "$build/tools/$x" ] || { echo "autotune.sh: $build/tools/$x missing: build first" >&2; exit 2; }
done
np=${NP:-2}
pattern=${PATTERN:--s 100 -l 10}
steps=${STEPS:-100}
fusion_grid=${FUSION_MIB:-0 1 4 16 64 128}
cycle_grid=${CYCLE_MS:-0 0.5 2 5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # run LABEL VAR=VALUE...: one benchmark run, its line to stdout
  local label=$1; shift
  local line
  # shellcheck disable=SC2086
  line=$(env "$@" "$build/tools/tandem-run" -np "$np" --bind "$build/tools/tandem-step-bench" \
         $pattern -n "$steps")
  echo "$label $line"
}

echo "== autotune.sh: np=$np pattern='$pattern' steps=$steps, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
{
  for f in $fusion_grid; do
    for c in $cycle_grid; do
      run "sweep fusion_mib=$f cycle_ms=$c cache=on" \
        TANDEM_FUSION_THRESHOLD=$((f * 1048576)) TANDEM_CYCLE_TIME="$c"
    done
  done
  run "sweep fusion_mib=128 cycle_ms=0.5 cache=off" TANDEM_CACHE_CAPACITY=0
  run "defaults" TANDEM_AUTOTUNE=0
  # shellcheck disable=SC2086
  run "autotune" TANDEM_AUTOTUNE=1 TANDEM_AUTOTUNE_LOG="$work/autotune.csv" ${AUTOTUNE_ENV:-}
} | tee "$work/runs.txt"
echo "== autotune log"
cat "$work/autotune.csv"
/usr/bin/python3 - "$work/runs.txt" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.search(r"bytes=(\d+) median_us=([\d.]+)", line)
    if not m or "check=ok" not in line:
        sys.exit("autotune.sh: a run failed: " + line.strip())
    label = line.split(" tandem-runtime")[0]
    rows.append((label, int(m.group(1)) / float(m.group(2)), line))
sweep = [r for r in rows if r[0].startswith("sweep")]
best = max(sweep, key=lambda r: r[1])
default = [r for r in rows if r[0] == "defaults"][0]
tuned = [r for r in rows if r[0] == "autotune"][0]
settle = re.search(r"autotune_settle_steps=(\d+) settled=(\S+)", tuned[2])
print("| run | settings | MB/s (bytes per µs) | ratio to the sweep's best |")
print("|---|---|---|---|")
for name, r, what in (("sweep's best", best, best[0][len("sweep "):]),
                      ("defaults", default, "fusion_mib=128 cycle_ms=0.5 cache=on"),
                      ("autotune, settled", tuned, settle.group(2) if settle else "?")):
    print("| %s | %s | %.0f | %.3f |" % (name, what, r[1], r[1] / best[1]))
print("autotune settled after %s steps (Horovod's default budget: 1600)"
      % (settle.group(1) if settle else "?"))
PY

#!/usr/bin/env bash
# Start-up at 16 ranks, side by side in one run: Tandem under srun on two
# nodes of the local Slurm cluster (srun -N 2 -n 16 --horovod=on: PMIx
# bootstrap, shared memory inside each node, TCP across) and Open MPI 4.1 on
# this host (mpirun --allow-run-as-root --oversubscribe -np 16). Both run
# build/tools/{,mpi-}startup-probe (contrib/bench/startup_probe.c): exec ->
# main -> init -> first allreduce, the slowest rank's times, and the time from
# just before the launcher command to the last rank's first allreduce; plus
# the launcher command's own wall time (to its exit, i.e. including
# finalize and teardown). Prints the median of REPEAT runs (default 5) per
# metric. Starts its own cluster instance and always stops it. Needs root.
#
#   contrib/bench/startup.sh [BUILD_DIR]        (default: build)
#   REPEAT=9 NP=16 contrib/bench/startup.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
repeat=${REPEAT:-5}
np=${NP:-16}
probe=$build/tools/startup-probe
mpiprobe=$build/tools/mpi-startup-probe
for x in "$probe" "$mpiprobe"; do
  [ -x "$x" ] || { echo "startup.sh: $x missing: build first (ninja -C $build)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "startup.sh: needs root (the cluster uses network namespaces)" >&2; exit 2; }

name=startup$$
cdir=$build/cluster/$name
out=$(mktemp -d /tmp/tandem-startup.XXXXXX)
cleanup() {
  "$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
cpus=$(( (np + 1) / 2 ))
"$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
  --nodes 2 --cpus "$((cpus < 8 ? 8 : cpus))" --gpus 0 >&2
# shellcheck disable=SC1091
. "$cdir/env.sh"

now_ns() { date +%s%N; }
# Runs "$@" with STARTUP_T0 set, appends the probe's line plus wall_ms= to $file.
timed() {
  local file=$1; shift
  local t0 line
  t0=$(now_ns)
  line=$(STARTUP_T0=$t0 "$@")
  echo "$line wall_ms=$(( ($(now_ns) - t0) / 1000000 ))" >> "$file"
}

# One untimed run of each first: page cache, slurmd's first step.
srun --immediate=30 -N 2 -n "$np" --horovod=on "$probe" > /dev/null
mpirun --allow-run-as-root --oversubscribe -np "$np" "$mpiprobe" > /dev/null
for i in $(seq "$repeat"); do
  echo "== run $i of $repeat (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  timed "$out/tandem.txt" srun --immediate=30 -N 2 -n "$np" --horovod=on "$probe"
  timed "$out/mpi.txt" mpirun --allow-run-as-root --oversubscribe -np "$np" -x STARTUP_T0 "$mpiprobe"
done

/usr/bin/python3 - "$out/tandem.txt" "$out/mpi.txt" "$np" <<'PY'
import statistics
import sys
def load(path):
    runs = [dict(kv.split("=") for kv in line.split()[1:]) for line in open(path) if "=" in line]
    return {k: statistics.median(float(r[k]) for r in runs) for k in runs[0]}, len(runs)
t, n = load(sys.argv[1])
m, _ = load(sys.argv[2])
np_ = sys.argv[3]
rows = [("exec -> first allreduce done", "exec_to_done_ms"),
        ("main -> first allreduce done", "main_to_done_ms"),
        ("main -> init returned", "main_to_init_ms"),
        ("launcher start -> first allreduce done", "launch_to_done_ms"),
        ("launcher command wall time", "wall_ms")]
print(f"\nstart-up, {np_} ranks, median of {n} runs, ms (slowest rank)")
print("%-40s %22s %22s %8s" % ("", f"srun -N 2 -n {np_} tandem", f"mpirun -np {np_}", "ratio"))
for label, k in rows:
    print("%-40s %22.1f %22.1f %8.2f" % (label, t[k], m[k], t[k] / m[k]))
print("target: tandem exec -> done <= 0.5 x mpirun start -> done: %.1f vs %.1f ms (%.2fx)"
      % (t["exec_to_done_ms"], m["launch_to_done_ms"], t["exec_to_done_ms"] / m["launch_to_done_ms"]))
PY

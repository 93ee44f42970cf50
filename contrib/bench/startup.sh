#!/usr/bin/env bash
# Start-up at 16 ranks, side by side in one run: Tandem under srun on two
# nodes of the local Slurm cluster (srun -N 2 -n 16 --horovod=on: PMIx
# bootstrap, shared memory inside each node, TCP across) and Open MPI 4.1 on
# this host (mpirun --allow-run-as-root --oversubscribe -np 16). Both run
# build/tools/{,mpi-}startup-probe (contrib/bench/startup_probe.c): process
# start (fork by slurmstepd / orted, so the launcher's pre-exec set-up of the
# task counts) -> main -> init -> first allreduce, the slowest rank's times,
# and the time from
# just before the launcher command to the last rank's first allreduce; plus
# the launcher command's own wall time (to its exit, i.e. including
# finalize and teardown). Prints the median of REPEAT runs (default 5) per
# metric. Starts two cluster instances in turn (plugin binding=auto, then
# binding=none) and always stops them. Needs root.
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

# Two cluster instances, one after the other: the plugin's default binding
# (binding=auto: each task loads the hwloc topology before exec) and
# binding=none, so that the table separates the plugin's per-task set-up
# from the engine's own start-up.
name=""
cdir=""
out=$(mktemp -d /tmp/tandem-startup.XXXXXX)
stop_cluster() {
  if [ -n "$name" ]; then
    "$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true
  fi
  name=""
}
trap 'stop_cluster; rm -rf "$out"' EXIT
cpus=$(( (np + 1) / 2 ))

now_ns() { date +%s%N; }
# Runs "$@" with STARTUP_T0 set, appends the probe's line plus wall_ms= to $file.
timed() {
  local file=$1; shift
  local t0 line
  t0=$(now_ns)
  line=$(STARTUP_T0=$t0 "$@")
  echo "$line wall_ms=$(( ($(now_ns) - t0) / 1000000 ))" >> "$file"
}

for binding in auto none; do
  name=startup$$$binding
  cdir=$build/cluster/$name
  "$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
    --nodes 2 --cpus "$((cpus < 8 ? 8 : cpus))" --gpus 0 --plugin-arg "binding=$binding" >&2
  # shellcheck disable=SC1091
  . "$cdir/env.sh"
  # One untimed run of each first: page cache, slurmd's first step.
  srun --immediate=30 -N 2 -n "$np" --horovod=on "$probe" > /dev/null
  mpirun --allow-run-as-root --oversubscribe -np "$np" "$mpiprobe" > /dev/null
  for i in $(seq "$repeat"); do
    echo "== binding=$binding run $i of $repeat (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    timed "$out/tandem-$binding.txt" srun --immediate=30 -N 2 -n "$np" --horovod=on "$probe"
    timed "$out/mpi.txt" mpirun --allow-run-as-root --oversubscribe -np "$np" -x STARTUP_T0 "$mpiprobe"
  done
  stop_cluster
done

/usr/bin/python3 - "$out" "$np" <<'PY'
import statistics
import sys
out, np_ = sys.argv[1], sys.argv[2]
def load(name):
    runs = [dict(kv.split("=") for kv in line.split()[1:]) for line in open(f"{out}/{name}") if "=" in line]
    return {k: statistics.median(float(r[k]) for r in runs) for k in runs[0]}, len(runs)
ta, n = load("tandem-auto.txt")
tn, _ = load("tandem-none.txt")
m, nm = load("mpi.txt")
rows = [("process start -> first allreduce done", "exec_to_done_ms"),
        ("main -> first allreduce done", "main_to_done_ms"),
        ("main -> init returned", "main_to_init_ms"),
        ("launcher start -> first allreduce done", "launch_to_done_ms"),
        ("launcher command wall time", "wall_ms")]
print(f"\nstart-up, {np_} ranks, ms (slowest rank), median of {n} runs per tandem column, {nm} for mpirun")
print("(tandem: srun -N 2 -n %s --horovod=on, plugin binding=auto / binding=none; mpirun -np %s on this host)" % (np_, np_))
print("%-40s %14s %14s %14s %8s %8s" % ("", "tandem auto", "tandem none", "mpirun", "auto/mpi", "none/mpi"))
for label, k in rows:
    print("%-40s %14.1f %14.1f %14.1f %8.2f %8.2f" % (label, ta[k], tn[k], m[k], ta[k] / m[k], tn[k] / m[k]))
print("target (tandem process start -> done <= 0.5 x mpirun start -> done): binding=auto %.2fx, binding=none %.2fx"
      % (ta["exec_to_done_ms"] / m["launch_to_done_ms"], tn["exec_to_done_ms"] / m["launch_to_done_ms"]))
PY

#!/usr/bin/env bash
# 2 ranks on two nodes of the local Slurm cluster (network namespaces joined
# by a bridge: docs/cluster.md), one rank per node, float32 sum allreduce over
# TCP, side by side in one run, every tool launched by srun:
#   tandem-bench       srun --horovod=on (PMIx bootstrap, TANDEM_TCP_IFNAME from the plugin)
#   Open MPI 4.1       srun --mpi=pmix (Open MPI as a PMIx client of slurmstepd),
#                      pml ob1, btl tcp,self on the node's bridge-side interface
#   torch gloo         srun, env:// rendezvous at node1's bridge address, GLOO_SOCKET_IFNAME
# and the link's ceiling: build/tests/unit/tcp/tcp-bandwidth under srun (both
# ranks sendrecv at once, the allreduce's traffic pattern). Starts its own
# cluster instance and always stops it. Needs root.
#
#   contrib/bench/compare-nodes.sh [BUILD_DIR]              (default: build)
#   REPEAT=3 SIZES="-b 16 -e 256M -f 4" contrib/bench/compare-nodes.sh
# With REPEAT=n the tools run n times, interleaved, and each size keeps its
# best run (the machine is shared; see docs/engine.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sweep=${SIZES:--b 16 -e 256M -f 4}
latency=${LATENCY:--b 8 -e 8}
repeat=${REPEAT:-1}
bench=$build/tools/tandem-bench
mpibench=$build/tools/mpi-allreduce-bench
tcpbw=$build/tests/unit/tcp/tcp-bandwidth
for x in "$bench" "$mpibench" "$tcpbw"; do
  [ -x "$x" ] || { echo "compare-nodes.sh: $x missing: build first (ninja -C $build)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "compare-nodes.sh: needs root (the cluster uses network namespaces)" >&2; exit 2; }

name=nodes$$
cdir=$build/cluster/$name
out=$(mktemp -d /tmp/tandem-compare-nodes.XXXXXX)
cleanup() {
  "$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
"$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
  --nodes 2 --cpus 8 --gpus 0 >&2
# shellcheck disable=SC1091
. "$cdir/env.sh"
# shellcheck disable=SC1091
. "$cdir/cluster.env"
node1=${SUBNET%.0/24}.11   # start.sh gives nodeI the address SUBNET.(10+I) on eth0
ifname=eth0
srun2=(srun --immediate=30 -N 2 -n 2 --ntasks-per-node=1)

for i in $(seq "$repeat"); do
  echo "== run $i of $repeat (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "${srun2[@]}" --horovod=on "$tcpbw" 256 >> "$out/link.txt"
  for sizes in "$latency" "$sweep"; do
    # shellcheck disable=SC2086
    "${srun2[@]}" --horovod=on "$bench" $sizes >> "$out/tandem.txt"
    # shellcheck disable=SC2086
    TANDEM_SHM_ARENA_BYTES=$((512 << 20)) "${srun2[@]}" --horovod=on "$bench" -s -i $sizes >> "$out/tandem-shared.txt"
    # shellcheck disable=SC2086
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$ifname \
      "${srun2[@]}" --mpi=pmix "$mpibench" $sizes >> "$out/mpi.txt"
    # shellcheck disable=SC2086
    MASTER_ADDR=$node1 MASTER_PORT=29500 GLOO_SOCKET_IFNAME=$ifname \
      "${srun2[@]}" /usr/bin/python3 "$root/contrib/bench/gloo_allreduce.py" --launched $sizes \
      >> "$out/gloo.txt" 2>/dev/null || echo "compare-nodes.sh: gloo run failed" >&2
  done
done

echo
echo "link ceiling (tcp-bandwidth, 2 ranks on 2 nodes, both directions at once; best of $repeat):"
/usr/bin/python3 - "$out/link.txt" <<'PY'
import sys
best = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[0].isdigit():
        best[int(f[0])] = max(best.get(int(f[0]), 0.0), float(f[2]))
for size, gbs in sorted(best.items()):
    print("  %4d MiB  %.2f GB/s per direction" % (size >> 20, gbs))
PY
/usr/bin/python3 "$root/contrib/bench/compare_table.py" \
  --title "float32 sum allreduce, 2 ranks on 2 nodes over TCP, time per call in us (busbw GB/s); ratio = tandem busbw / other's busbw" \
  --col "tandem=$out/tandem.txt" --col "tandem -s=$out/tandem-shared.txt" \
  --col "mpi tcp=$out/mpi.txt" --col "gloo=$out/gloo.txt" \
  --ratio "vs mpi=tandem:mpi tcp" --ratio "vs gloo=tandem:gloo" --ratio "-s vs best=tandem -s:mpi tcp,gloo"

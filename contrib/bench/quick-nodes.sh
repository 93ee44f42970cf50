#!/usr/bin/env bash
# Quick regression check of the data path across nodes (a few minutes):
# tandem-bench against Open MPI 4.1 (pml ob1, btl tcp) under srun,
# one rank per namespace node of the local cluster, on 2 and on 8 nodes, a
# few sizes, two interleaved rounds; prints the best round per tool and size
# and the ratio (tandem busbw / Open MPI busbw; time ratio where busbw rounds
# to 0), with the load average and steal time beside each table. Not a test:
# it asserts nothing (the machine is shared: docs/engine.md). Needs root.
#
#   contrib/bench/quick-nodes.sh [BUILD_DIR]            (default: build)
#   NODES_LIST="2" ROUNDS=3 contrib/bench/quick-nodes.sh
# CC: every node's TCP congestion control, as in compare-nodes.sh (default
# cubic; CC=host keeps the host's).
# The full sweep is contrib/bench/compare-nodes.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
nodes_list=${NODES_LIST:-2 8}
rounds=${ROUNDS:-2}
cc=${CC:-cubic}
congestion_arg=()
[ "$cc" = host ] || congestion_arg=(--tcp-congestion "$cc")
bench=$build/tools/tandem-bench
mpibench=$build/tools/mpi-allreduce-bench
for x in "$bench" "$mpibench"; do
  [ -x "$x" ] || { echo "quick-nodes.sh: $x missing: build first (ninja -C $build)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "quick-nodes.sh: needs root (the cluster uses network namespaces)" >&2; exit 2; }

out=$(mktemp -d /tmp/tandem-quick-nodes.XXXXXX)
name=""
cdir=""
stop_cluster() {
  [ -n "$name" ] && "$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true
  name=""
}
trap 'stop_cluster; rm -rf "$out"' EXIT

stat_cpu() { awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9}' /proc/stat; }

start=$(date +%s)
for n in $nodes_list; do
  name=quick$$n$n
  cdir=$build/cluster/$name
  "$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
    --nodes "$n" --cpus 8 --gpus 0 "${congestion_arg[@]}" >/dev/null
  # shellcheck disable=SC1091
  . "$cdir/env.sh"
  srunn=(srun --immediate=30 --kill-on-bad-exit=1 -N "$n" -n "$n" --ntasks-per-node=1)
  mpi_env=(env OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=eth0)
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  cpu0=$(stat_cpu)
  # Open MPI's ranks never stop polling: with more ranks than cores one of
  # its calls can last several scheduler slices, so the 8-node round is
  # short, and every run is cut off after a minute (a missing size shows as
  # '-').
  if [ "$n" -le 2 ]; then small=(-n 500); sweep=(-b 64K -e 16M -f 16 -n 20)
  else small=(-n 20); sweep=(-b 64K -e 1M -f 16 -n 5); fi
  for r in $(seq "$rounds"); do
    for tool in tandem mpi; do
      for sizes in "-b 8 -e 8 ${small[*]}" "${sweep[*]}"; do
        if [ "$tool" = tandem ]; then cmd=("${srunn[@]}" --horovod=on "$bench")
        else cmd=("${mpi_env[@]}" "${srunn[@]}" --mpi=pmix "$mpibench"); fi
        # shellcheck disable=SC2086
        timeout 60 "${cmd[@]}" $sizes >> "$out/$tool-$n.txt" || echo "quick-nodes.sh: $tool on $n nodes ($sizes) failed or ran out of time" >&2
      done
    done
  done
  steal=$(echo "$cpu0 $(stat_cpu)" | awk '{dt = $3 - $1; printf "%.0f", (dt > 0 ? 100 * ($4 - $2) / dt : 0)}')
  congestion=$(nsenter --net="/run/netns/tandem-$name-node1" cat /proc/sys/net/ipv4/tcp_congestion_control)
  echo "$n nodes ($congestion): load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end, steal $steal%" \
    > "$out/conditions-$n.txt"
  stop_cluster
done

for n in $nodes_list; do
  echo
  cat "$out/conditions-$n.txt"
  /usr/bin/python3 "$root/contrib/bench/compare_table.py" \
    --title "float32 sum allreduce, $n ranks on $n nodes over TCP, best of $rounds rounds: time in us (busbw GB/s)" \
    --col "tandem=$out/tandem-$n.txt" --col "mpi tcp=$out/mpi-$n.txt" --ratio "ratio=tandem:mpi tcp"
done
echo
echo "quick-nodes.sh: $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# NODES ranks on NODES nodes of the local Slurm cluster (network namespaces
# joined by a bridge: docs/cluster.md), one rank per node, float32 sum
# allreduce over TCP, out of place and in place (send == recv; Open MPI
# MPI_IN_PLACE) on both sides, side by side in one run, every tool launched
# by srun:
#   tandem-bench       srun --horovod=on (PMIx bootstrap, TANDEM_TCP_IFNAME from the plugin)
#   Open MPI 4.1       srun --mpi=pmix (Open MPI as a PMIx client of slurmstepd),
#                      pml ob1, btl tcp,self on the node's bridge-side interface,
#                      its default (tuned) algorithm choice
#   torch gloo         srun, env:// rendezvous at node1's bridge address, GLOO_SOCKET_IFNAME
# and the link's ceiling: build/tests/unit/tcp/tcp-bandwidth under srun on two
# of the nodes (both ranks sendrecv at once, the 2-node allreduce's traffic
# pattern). Starts its own cluster instance and always stops it. Needs root.
#
#   contrib/bench/compare-nodes.sh [BUILD_DIR]              (default: build)
#   REPEAT=3 SIZES="-b 16 -e 256M -f 4" contrib/bench/compare-nodes.sh
#   NODES=8 GLOO=0 SIZES="-b 8 -e 64M -f 8" contrib/bench/compare-nodes.sh
# With REPEAT=n the tools run n times, interleaved: per run an out-of-place
# and an in-place table (with the load average and the steal time of the
# run beside it), then the same of each size's best run (the machine is
# shared; see docs/engine.md); STAT=median gives each size's median run
# instead, STAT="best median" both (the median is the steadier judge where
# one launch's placement moves a size by more than the tools differ).
# Ratios are Tandem's busbw over Open MPI's in the same mode ("vs mpi");
# the in-place table adds "vs any" (Open MPI's better mode) and "in/out"
# (Tandem's own out-of-place run); under each table, the sizes where a
# ratio is below 1.0. MODES="in" or "out" measures one mode only.
# The output starts with each node's rank's allowed CPUs ("placement:").
# PIN=1 runs each node's rank on a CPU of its own, node i on CPU i mod the
# host's CPUs, for every tool: the namespace nodes share the host's CPUs,
# and unpinned the scheduler sometimes puts both ranks of a 2-node run on
# one CPU, which moves Open MPI's 1 MiB allreduce time by several times
# from launch to launch (docs/tcp.md, "Where the time goes"); pinned, the
# nodes are what they stand for, machines that do not share CPUs.
# CC names the TCP congestion control every node's namespace uses by default
# for every tool (default cubic, Linux's own default; CC=host keeps what the
# host's namespaces inherit, bbr on this VM). Between namespace nodes of one
# host BBR is not what it is between machines: the veth link hands each
# packet to the queue of the CPU that sends it, a flow sent from two CPUs
# arrives out of order, and BBR then holds some connections at a fraction of
# their speed for a whole launch and paces Open MPI's large writes, so both
# tools' large allreduces are slower and swing from launch to launch:
# docs/tcp.md, "Piece by congestion control". The cluster sets it
# (start.sh --tcp-congestion).
# GLOO=1 adds gloo (in place), SHARED=1 adds tandem-bench -s -i (send buffers in
# the shared arena, in place), LINK=0 leaves the link ceiling out, ITERS=n
# gives every tool n timed calls per size (default: each tool's own, by
# size; Open MPI's ranks poll without end, and with more ranks than cores a
# call can last several scheduler slices). Each tool's run is cut off after RUN_TIMEOUT
# seconds (900), and a rank that dies ends its step (srun -K): Open MPI 4.1.4
# has crashed here after "connect() ... failed: Operation now in progress"
# with 8 ranks on a loaded host (open-mpi/ompi#10734).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sweep=${SIZES:--b 16 -e 256M -f 4}
latency=${LATENCY:--b 8 -e 8}
repeat=${REPEAT:-1}
stats=${STAT:-best}
for stat in $stats; do
  case $stat in best|median) ;; *) echo "compare-nodes.sh: STAT must be best, median or \"best median\", not '$stat'" >&2; exit 2 ;; esac
done
nodes=${NODES:-2}
modes=${MODES:-out in}
gloo=${GLOO:-0}
shared=${SHARED:-0}
link=${LINK:-1}
pin=${PIN:-0}
cc=${CC:-cubic}
if [ "$cc" != host ] && ! grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control; then
  echo "compare-nodes.sh: CC=$cc is not a congestion control this kernel has ($(cat /proc/sys/net/ipv4/tcp_available_congestion_control)); or CC=host" >&2
  exit 2
fi
case $pin in 0|1) ;; *) echo "compare-nodes.sh: PIN must be 0 or 1, not '$pin'" >&2; exit 2 ;; esac
iters=()
[ -n "${ITERS:-}" ] && iters=(-n "$ITERS")
bench=$build/tools/tandem-bench
mpibench=$build/tools/mpi-allreduce-bench
tcpbw=$build/tests/unit/tcp/tcp-bandwidth
for x in "$bench" "$mpibench" "$tcpbw"; do
  [ -x "$x" ] || { echo "compare-nodes.sh: $x missing: build first (ninja -C $build)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "compare-nodes.sh: needs root (the cluster uses network namespaces)" >&2; exit 2; }
[ "$nodes" -ge 2 ] || { echo "compare-nodes.sh: NODES must be at least 2" >&2; exit 2; }

name=nodes$$
cdir=$build/cluster/$name
out=$(mktemp -d /tmp/tandem-compare-nodes.XXXXXX)
cleanup() {
  "$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
congestion_arg=()
[ "$cc" = host ] || congestion_arg=(--tcp-congestion "$cc")
"$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
  --nodes "$nodes" --cpus 8 --gpus 0 "${congestion_arg[@]}" >&2
# shellcheck disable=SC1091
. "$cdir/env.sh"
# shellcheck disable=SC1091
. "$cdir/cluster.env"
congestion=$(nsenter --net="/run/netns/tandem-$name-node1" cat /proc/sys/net/ipv4/tcp_congestion_control)
echo "congestion control: $congestion on every node (CC=$cc)"
node1=${SUBNET%.0/24}.11   # start.sh gives nodeI the address SUBNET.(10+I) on eth0
ifname=eth0
srunn=(timeout "${RUN_TIMEOUT:-900}" srun --immediate=30 --kill-on-bad-exit=1 -N "$nodes" -n "$nodes" --ntasks-per-node=1)
# With PIN=1 every tool's command starts behind this prefix on its node
# (after the plugin's own binding, which gives a lone task its whole node).
pinned=()
if [ "$pin" = 1 ]; then
  # shellcheck disable=SC2016
  pinned=(bash -c 'exec taskset -c "$(( SLURM_NODEID % '"$(nproc --all)"' ))" "$@"' pinned)
fi
# Where each node's rank runs, as the tools' ranks will: a task's allowed CPUs.
# shellcheck disable=SC2016
echo "placement: $("${srunn[@]}" --horovod=on "${pinned[@]}" bash -c \
  'echo "$SLURMD_NODENAME:$(sed -n "s/^Cpus_allowed_list:\s*//p" /proc/self/status)"' | sort -V | paste -sd' ')"

# CPU time stolen by the hypervisor, percent of all CPU time since the
# last call (the "st" of top), from /proc/stat's cpu line.
steal_prev=""
steal() {
  local now total
  now=$(awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9}' /proc/stat)
  if [ -n "$steal_prev" ]; then
    total=$(echo "$steal_prev $now" | awk '{dt = $3 - $1; ds = $4 - $2; printf "%.0f", (dt > 0 ? 100 * ds / dt : 0)}')
    echo "$total%"
  fi
  steal_prev=$now
}

for i in $(seq "$repeat"); do
  run=$out/run$i
  mkdir -p "$run"
  steal >/dev/null
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start" > "$run/conditions"
  echo "== run $i of $repeat ($(cat "$run/conditions"))" >&2
  if [ "$link" = 1 ]; then
    srun --immediate=30 -N 2 -n 2 --ntasks-per-node=1 --horovod=on "${pinned[@]}" "$tcpbw" 256 >> "$run/link.txt"
  fi
  for sizes in "$latency" "$sweep"; do
    for mode in $modes; do
      flag=(); [ "$mode" = in ] && flag=(-i)
      # shellcheck disable=SC2086
      "${srunn[@]}" --horovod=on "${pinned[@]}" "$bench" "${flag[@]}" $sizes "${iters[@]}" >> "$run/tandem-$mode.txt" ||
        echo "compare-nodes.sh: tandem-bench ${flag[*]} failed or ran out of time ($sizes)" >&2
      # shellcheck disable=SC2086
      OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$ifname \
        "${srunn[@]}" --mpi=pmix "${pinned[@]}" "$mpibench" "${flag[@]}" $sizes "${iters[@]}" >> "$run/mpi-$mode.txt" ||
        echo "compare-nodes.sh: mpi-allreduce-bench ${flag[*]} failed or ran out of time ($sizes)" >&2
    done
    if [ "$shared" = 1 ]; then
      # shellcheck disable=SC2086
      TANDEM_SHM_ARENA_BYTES=$((512 << 20)) "${srunn[@]}" --horovod=on "${pinned[@]}" "$bench" -s -i $sizes "${iters[@]}" >> "$run/tandem-shared.txt"
    fi
    if [ "$gloo" = 1 ]; then
      # shellcheck disable=SC2086
      MASTER_ADDR=$node1 MASTER_PORT=29500 GLOO_SOCKET_IFNAME=$ifname \
        "${srunn[@]}" "${pinned[@]}" /usr/bin/python3 "$root/contrib/bench/gloo_allreduce.py" --launched $sizes \
        >> "$run/gloo.txt" 2>/dev/null || echo "compare-nodes.sh: gloo run failed" >&2
    fi
  done
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, steal $(steal) of CPU time during the run" >> "$run/conditions"
done

# tables STAT TITLE RUN_DIR...: the out-of-place and the in-place table
# over the runs given (each size's best or median run per tool).
tables() {
  local stat=$1 title=$2; shift 2
  local label d
  for label in tandem-out tandem-in tandem-shared mpi-out mpi-in gloo; do
    local files=()
    for d in "$@"; do [ -s "$d/$label.txt" ] && files+=("$d/$label.txt"); done
    rm -f "$out/$label.all"
    [ ${#files[@]} -gt 0 ] && cat "${files[@]}" > "$out/$label.all"
  done
  if [ -s "$out/tandem-out.all" ] || [ -s "$out/mpi-out.all" ]; then
    /usr/bin/python3 "$root/contrib/bench/compare_table.py" --title "$title, OUT OF PLACE (both sides)" \
      --col "tandem=$out/tandem-out.all" --col "mpi tcp=$out/mpi-out.all" --ratio "vs mpi=tandem:mpi tcp" --stat "$stat"
  fi
  if [ -s "$out/tandem-in.all" ] || [ -s "$out/mpi-in.all" ] || [ -s "$out/tandem-shared.all" ]; then
    local cols=(--col "tandem -i=$out/tandem-in.all" --col "mpi tcp -i=$out/mpi-in.all")
    local ratios=(--ratio "vs mpi=tandem -i:mpi tcp -i")
    if [ -s "$out/mpi-out.all" ]; then
      cols+=(--ref "mpi tcp=$out/mpi-out.all" --ref "tandem=$out/tandem-out.all")
      ratios+=(--ratio "vs any=tandem -i:mpi tcp -i,mpi tcp" --ratio "in/out=tandem -i:tandem")
    fi
    if [ -s "$out/tandem-shared.all" ]; then
      cols+=(--col "tandem -s -i=$out/tandem-shared.all"); ratios+=(--ratio "-s vs mpi=tandem -s -i:mpi tcp -i")
    fi
    if [ -s "$out/gloo.all" ]; then
      cols+=(--col "gloo=$out/gloo.all"); ratios+=(--ratio "vs gloo=tandem -i:gloo")
    fi
    /usr/bin/python3 "$root/contrib/bench/compare_table.py" --title "$title, IN PLACE (both sides)" \
      "${cols[@]}" "${ratios[@]}" --stat "$stat"
  fi
}

pinning=""
[ "$pin" = 0 ] || pinning=", node i's rank pinned to CPU i mod $(nproc --all)"
what="float32 sum allreduce, $nodes ranks on $nodes nodes over TCP ($congestion)$pinning, time per call in us (busbw GB/s); ratio = tandem busbw / other's busbw"
for i in $(seq "$repeat"); do
  echo
  echo "run $i of $repeat: $(paste -sd';' "$out/run$i/conditions" | sed 's/;/; /')"
  tables best "$what" "$out/run$i"
done
if [ "$repeat" -gt 1 ]; then
  for stat in $stats; do
    echo
    echo "$stat of $repeat runs per tool and size:"
    tables "$stat" "$what" "$out"/run*
  done
fi
if [ "$link" = 1 ]; then
  echo
  echo "link ceiling (tcp-bandwidth, 2 ranks on 2 nodes, both directions at once; best of $repeat):"
  cat "$out"/run*/link.txt > "$out/link.all"
  /usr/bin/python3 - "$out/link.all" <<'PY'
import sys
best = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3 and f[0].isdigit():
        best[int(f[0])] = max(best.get(int(f[0]), 0.0), float(f[2]))
for size, gbs in sorted(best.items()):
    print("  %4d MiB  %.2f GB/s per direction" % (size >> 20, gbs))
PY
fi

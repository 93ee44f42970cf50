#!/usr/bin/env bash
# Starts a real Slurm 22.05 cluster on this machine: slurmctld in the host
# network namespace plus N slurmd, each in its own network and UTS namespace
# (hostname nodeI) joined by a bridge, with fake GPUs and the Tandem plugin
# from the build tree. Everything lives under one directory; nothing is
# written to /etc. Needs root. Stop it with stop.sh and the same --name.
#
#   contrib/cluster/start.sh --name demo --nodes 3 --cpus 8
#   source build/cluster/demo/env.sh && srun -N 3 hostname
#
# Several instances can run at once: the bridge, its /24 subnet and the
# slurmctld port come from a slot 0..249 claimed atomically by creating the
# bridge tdbrSLOT (ip link add fails if another instance holds it).
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster_parse_args "$@"
me=start.sh

[ "$(id -u)" -eq 0 ] || { echo "$me: needs root (network namespaces, mknod)" >&2; exit 1; }
plugin=$build/plugin/tandem_spank.so
engine=$build/engine/libtandem.so
if [ -n "$plugstack" ]; then
  # An installed Tandem (a package): Slurm reads that plugstack file as a
  # site's would, and nothing of a build tree is named anywhere.
  [ -f "$plugstack" ] || { echo "$me: --plugstack $plugstack: no such file" >&2; exit 1; }
  if [ ${#plugin_args[@]} -gt 0 ]; then
    echo "$me: --plugin-arg cannot be added to --plugstack $plugstack: edit that file" >&2
    exit 2
  fi
  plugstack_conf=$(realpath "$plugstack")
else
  plugstack_conf=$dir/plugstack.conf
  for f in "$plugin" "$engine"; do
    [ -f "$f" ] || { echo "$me: $f not found: build first (ninja -C $build)" >&2; exit 1; }
  done
fi
if [ -e "$dir" ] || [ -n "$(cluster_namespaces)" ] || [ -n "$(cluster_bridges)" ]; then
  echo "$me: instance '$name' already exists (state $dir, or its namespaces/bridge):" \
       "run contrib/cluster/stop.sh --name $name --dir $dir first" >&2
  exit 1
fi

# From here on, any failure removes what was made so far.
started=0
on_exit() {
  local rc=$?
  if [ "$started" -eq 0 ]; then
    echo "$me: start failed (exit $rc); logs:" >&2
    for log in "$dir"/log/*.log; do
      [ -f "$log" ] && { echo "--- $log" >&2; tail -n 15 "$log" >&2; }
    done
    "$(dirname "$0")/stop.sh" --name "$name" --dir "$dir" --build "$build" >&2 || true
  fi
}
trap on_exit EXIT

mkdir -p "$dir"/{ctld/state,log,dev,conf}
chmod 0755 "$dir"

# ---------------------------------------------------------------- network
slot=""
start_slot=$(( $(printf '%s' "$name" | cksum | cut -d' ' -f1) % 250 ))
for i in $(seq 0 249); do
  s=$(( (start_slot + i) % 250 ))
  subnet=10.213.$s
  port=$(( 21000 + s * 2 ))
  ip -4 -o addr show | grep -q " $subnet\." && continue
  ss -ltnH "sport = :$port" | grep -q . && continue
  if ip link add name "tdbr$s" type bridge 2>/dev/null; then slot=$s; break; fi
done
[ -n "$slot" ] || { echo "$me: no free slot (bridge tdbrN, subnet 10.213.N.0/24, port 21000+2N)" >&2; exit 1; }
bridge=tdbr$slot
ip link set dev "$bridge" alias "$bridge_alias"
ip addr add "$subnet.1/24" dev "$bridge"
ip link set dev "$bridge" up

cat >"$dir/cluster.env" <<EOF
NAME=$name
SLOT=$slot
BRIDGE=$bridge
SUBNET=$subnet.0/24
CTLD_ADDR=$subnet.1
CTLD_PORT=$port
NODES=$nodes
CPUS=$cpus
GPUS=$gpus
BUILD=$build
PLUGSTACK=$plugstack_conf
EOF

for n in $(seq 1 "$nodes"); do
  ns=$netns_prefix$n
  ip netns add "$ns"
  ip link add "td${slot}n$n" type veth peer name eth0 netns "$ns"
  ip link set "td${slot}n$n" master "$bridge" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$subnet.$((10 + n))/24" dev eth0
  ip -n "$ns" link set eth0 up
  # srun and the clients live in the host namespace at other addresses.
  ip -n "$ns" route add default via "$subnet.1"
  mkdir -p "$dir/nodes/node$n"/{spool,tmp}
done

# A namespace outside the host's may only default to a congestion control
# the host allows; the list is put back by stop.sh.
if [ -n "$tcp_congestion" ]; then
  if ! grep -qw -- "$tcp_congestion" /proc/sys/net/ipv4/tcp_available_congestion_control; then
    echo "$me: --tcp-congestion $tcp_congestion: this kernel has only" \
         "$(cat /proc/sys/net/ipv4/tcp_available_congestion_control)" >&2
    exit 2
  fi
  allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
  case " $allowed " in
    *" $tcp_congestion "*) ;;
    *) echo "$allowed" > "$dir/allowed_congestion_before"
       sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed $tcp_congestion" ;;
  esac
  for n in $(seq 1 "$nodes"); do
    nsenter --net="/run/netns/$netns_prefix$n" sysctl -q -w net.ipv4.tcp_congestion_control="$tcp_congestion"
  done
fi

# ---------------------------------------------------------------- fake GPUs
# Character devices (NVIDIA's major 195): gres/gpu ignores plain files and
# then sets no CUDA_VISIBLE_DEVICES.
gpu_files=""
if [ "$gpus" -gt 0 ]; then
  for g in $(seq 0 $((gpus - 1))); do mknod -m 0666 "$dir/dev/nvidia$g" c 195 "$g"; done
  gpu_files="$dir/dev/nvidia[0-$((gpus - 1))]"
fi

# ---------------------------------------------------------------- config
# The packages as Meson laid them out in the build tree (with _config.py
# naming this build's libtandem), as a site install would have them.
python_arg=()
if [ -d "$build/python/tandem" ]; then python_arg=("python=$build/python")
elif [ -d "$root/python" ]; then python_arg=("python=$root/python"); fi
[ -n "$plugstack" ] || echo "required $plugin engine=$engine ${python_arg[*]} ${plugin_args[*]}" >"$plugstack_conf"

{
  echo "AutoDetect=off"
  [ -n "$gpu_files" ] && echo "NodeName=node[1-$nodes] Name=gpu File=$gpu_files"
} >"$dir/gres.conf"

gres_line=""
[ "$gpus" -gt 0 ] && gres_line="Gres=gpu:$gpus"
cat >"$dir/slurm.conf" <<EOF
# Generated by contrib/cluster/start.sh for instance '$name'.
ClusterName=$(echo "tandem$name" | tr -d '-' | cut -c1-32)
SlurmctldHost=localhost($subnet.1)
SlurmctldPort=$port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/ctld/state
SlurmctldPidFile=$dir/ctld/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdSpoolDir=$dir/nodes/%n/spool
SlurmdPidFile=$dir/nodes/%n/slurmd.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
TmpFS=$dir/nodes/%n/tmp
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
PlugStackConfig=$plugstack_conf
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=10
KillWait=2
MinJobAge=60
InactiveLimit=0
SlurmctldDebug=info
SlurmdDebug=info
EOF
for n in $(seq 1 "$nodes"); do
  echo "NodeName=node$n NodeAddr=$subnet.$((10 + n)) NodeHostname=node$n CPUs=$cpus RealMemory=1024 $gres_line State=UNKNOWN" >>"$dir/slurm.conf"
done
echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"

cat >"$dir/env.sh" <<EOF
# source this to use instance '$name' with srun/sbatch/squeue
export SLURM_CONF=$dir/slurm.conf
EOF
export SLURM_CONF=$dir/slurm.conf

# ---------------------------------------------------------------- daemons
wait_for_file() {  # wait_for_file PATH WHAT: pidfiles appear after the fork
  local i
  for i in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  echo "$me: $2 did not write $1 within 10 s" >&2
  return 1
}

slurmctld -c -f "$dir/slurm.conf"
wait_for_file "$dir/ctld/slurmctld.pid" slurmctld
for n in $(seq 1 "$nodes"); do
  # Not 'ip netns exec': it remounts /sys and slurmd then finds no cgroup fs.
  nsenter --net="/run/netns/$netns_prefix$n" unshare --uts \
    sh -c "hostname node$n && exec slurmd -f '$dir/slurm.conf' -N node$n"
done
for n in $(seq 1 "$nodes"); do
  wait_for_file "$dir/nodes/node$n/slurmd.pid" "slurmd on node$n"
done

deadline=$(( $(date +%s) + wait_s ))
while :; do
  idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
  [ "$idle" -eq "$nodes" ] && break
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "$me: only $idle of $nodes nodes idle after ${wait_s}s:" >&2
    sinfo -N -l >&2 || true
    exit 1
  fi
  sleep 0.2
done

started=1
echo "cluster '$name' up: $nodes nodes x $cpus CPUs, $gpus GPUs each; controller $subnet.1:$port"
echo "  source $dir/env.sh   # then srun/sbatch as usual"
echo "  $(dirname "$0")/stop.sh --name $name --dir $dir"

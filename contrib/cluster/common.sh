# Shared by start.sh and stop.sh: option parsing and the names every piece of
# one cluster instance is derived from. Sourced, not run.
#
# An instance is identified by its NAME only. Everything it creates carries
# the name (network namespaces tandem-NAME-nodeI, the bridge's alias
# tandem:NAME, the state directory), so stop.sh can find and remove all of it
# even when start.sh was killed half-way and wrote no state file.

cluster_usage() {
  cat <<EOF
usage: $(basename "$0") [options]
  --name NAME        instance name, [a-z0-9-]{1,16} (env TANDEM_CLUSTER_NAME;
                     default: derived from the build dir, so worktrees differ)
  --build DIR        build tree holding plugin/tandem_spank.so (env BUILD; default <repo>/build)
  --dir DIR          state directory (env TANDEM_CLUSTER_DIR; default <build>/cluster/NAME)
start.sh only:
  --nodes N          number of slurmd nodes (default 3)
  --cpus C           CPUs per node, may exceed the real core count (default 8)
  --gpus G           fake GPUs per node, character devices (default 4)
  --plugin-arg K=V   extra plugstack.conf argument for tandem_spank.so (repeatable;
                     env TANDEM_PLUGIN_ARGS, space separated)
  --plugstack FILE   use FILE as Slurm's PlugStackConfig instead of a line for the
                     build tree's plugin (e.g. /etc/slurm/plugstack.conf: what a
                     package installed); no build tree is needed then
  --timeout S        seconds to wait for every node to be idle (default 30)
  --tcp-congestion CC  every node's default TCP congestion control (e.g. cubic;
                     default: what the host's namespaces inherit). Where the host
                     does not allow CC outside its own namespace, it is added to
                     net.ipv4.tcp_allowed_congestion_control until stop.sh
EOF
}

cluster_parse_args() {
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  build=${BUILD:-$root/build}
  name=${TANDEM_CLUSTER_NAME:-}
  dir=${TANDEM_CLUSTER_DIR:-}
  nodes=3 cpus=8 gpus=4 wait_s=30 plugstack="" tcp_congestion=""
  # shellcheck disable=SC2206
  plugin_args=(${TANDEM_PLUGIN_ARGS:-})
  while [ $# -gt 0 ]; do
    case $1 in
      --name) name=$2; shift 2 ;;
      --build) build=$2; shift 2 ;;
      --dir) dir=$2; shift 2 ;;
      --nodes) nodes=$2; shift 2 ;;
      --cpus) cpus=$2; shift 2 ;;
      --gpus) gpus=$2; shift 2 ;;
      --plugin-arg) plugin_args+=("$2"); shift 2 ;;
      --plugstack) plugstack=$2; shift 2 ;;
      --timeout) wait_s=$2; shift 2 ;;
      --tcp-congestion) tcp_congestion=$2; shift 2 ;;
      -h|--help) cluster_usage; exit 0 ;;
      *) echo "$(basename "$0"): unknown argument '$1'" >&2; cluster_usage >&2; exit 2 ;;
    esac
  done
  build=$(realpath -m "$build")
  if [ -z "$name" ]; then
    name=t$(printf '%s' "$build" | cksum | cut -c1-6)
  fi
  if ! [[ $name =~ ^[a-z0-9-]{1,16}$ ]]; then
    echo "$(basename "$0"): --name '$name' is not valid: use 1 to 16 of [a-z0-9-]" >&2
    exit 2
  fi
  local v
  for v in nodes cpus gpus wait_s; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || { [ "$v" != gpus ] && [ "${!v}" -lt 1 ]; }; then
      echo "$(basename "$0"): --${v%_s} '${!v}' is not a positive integer" >&2
      exit 2
    fi
  done
  if [ "$nodes" -gt 64 ] || [ "$gpus" -gt 16 ]; then
    echo "$(basename "$0"): at most 64 nodes and 16 GPUs per node (got $nodes, $gpus)" >&2
    exit 2
  fi
  [ -n "$dir" ] || dir=$build/cluster/$name
  dir=$(realpath -m "$dir")
  netns_prefix=tandem-$name-node
  bridge_alias=tandem:$name
}

# Namespaces of this instance, from the kernel (not from state files).
cluster_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${netns_prefix}[0-9]+\$" || true
}

# Bridges carrying this instance's alias.
cluster_bridges() {
  ip -o -d link show type bridge 2>/dev/null |
    awk -v a="$bridge_alias" '{ for (i = 1; i < NF; i++) if ($i == "alias" && $(i+1) == a) { sub(":$", "", $2); print $2 } }'
}

# Pids of processes started with this instance's slurm.conf (slurmctld, and
# slurmd/slurmstepd should they have escaped their namespace).
cluster_conf_pids() {
  local conf=$dir/slurm.conf p
  for p in /proc/[0-9]*; do
    if tr '\0' '\n' 2>/dev/null <"$p/cmdline" | grep -qxF -- "$conf"; then
      echo "${p#/proc/}"
    fi
  done
}

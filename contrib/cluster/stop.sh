#!/usr/bin/env bash
# Stops a cluster started by start.sh with the same --name (and --dir/--build
# if they were given) and removes everything it made: daemons, job steps and
# tasks, network namespaces, veths, the bridge, fake device nodes and the state
# directory. Idempotent: safe to run twice, or after start.sh crashed.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cluster_parse_args "$@"

# kill_all PID...: TERM, wait up to 5 s, then KILL what is left.
kill_all() {
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  local i p alive
  for i in $(seq 1 50); do
    alive=()
    for p in "$@"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.1
  done
  kill -KILL "${alive[@]}" 2>/dev/null
  sleep 0.2
}

# Every process in a node's namespace belongs to that node: slurmd,
# slurmstepd and the tasks. Kill them all before the namespace goes.
for ns in $(cluster_namespaces); do
  # shellcheck disable=SC2046
  kill_all $(ip netns pids "$ns" 2>/dev/null)
  ip netns delete "$ns" 2>/dev/null
done

# slurmctld (and anything else started with this instance's slurm.conf): found
# by the exact config path on its command line, not by a pidfile that may be
# stale or missing after a crash.
# Their children too (slurmctld's slurmscriptd shows no config path).
ctld=$(cluster_conf_pids)
children=$(for p in $ctld; do pgrep -P "$p"; done)
# shellcheck disable=SC2086
kill_all $ctld $children

# Deleting a namespace destroys its veth pairs; the bridge goes by alias.
for br in $(cluster_bridges); do ip link delete "$br" 2>/dev/null; done

# The host's list of allowed congestion controls, as it was before start.sh
# --tcp-congestion widened it.
if [ -f "$dir/allowed_congestion_before" ]; then
  sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$(cat "$dir/allowed_congestion_before")"
fi

# State directory: only a directory start.sh made (it holds cluster.env or
# slurm.conf), never an arbitrary --dir.
if [ -d "$dir" ]; then
  if [ -f "$dir/cluster.env" ] || [ -f "$dir/slurm.conf" ] || [ -d "$dir/ctld" ]; then
    rm -rf "$dir"
  else
    echo "stop.sh: $dir does not look like a cluster directory; left in place" >&2
  fi
fi

left=$( { cluster_namespaces; cluster_bridges; cluster_conf_pids; } | tr '\n' ' ')
if [ -n "${left// /}" ]; then
  echo "stop.sh: could not remove all of instance '$name': $left" >&2
  exit 1
fi
echo "cluster '$name' stopped"

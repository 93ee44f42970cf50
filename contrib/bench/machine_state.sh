# Sourced by the benchmarks: how busy this machine was while they measured.
# state_begin; ...; state_end prints one line: the 1-minute load average at
# both ends, and the share of CPU time the hypervisor stole (steal, from
# /proc/stat) and the share that was busy at all (not idle) in between.

_cpu_sample() {
  # total jiffies, idle + iowait, steal (cpu user nice system idle iowait irq softirq steal ...)
  awk '/^cpu /{t=0; for (i = 2; i <= 9; i++) t += $i; print t, $5 + $6, $9}' /proc/stat
}

state_begin() {
  _state_load0=$(cut -d' ' -f1 /proc/loadavg)
  read -r _state_t0 _state_i0 _state_s0 < <(_cpu_sample)
  _state_w0=$(date +%s)
}

state_end() {
  local t1 i1 s1 load1 dt
  load1=$(cut -d' ' -f1 /proc/loadavg)
  read -r t1 i1 s1 < <(_cpu_sample)
  dt=$((t1 - _state_t0))
  [ "$dt" -gt 0 ] || dt=1
  awk -v l0="$_state_load0" -v l1="$load1" -v st=$((s1 - _state_s0)) -v idle=$((i1 - _state_i0)) \
      -v dt="$dt" -v secs=$(($(date +%s) - _state_w0)) -v cpus="$(nproc)" \
      'BEGIN { printf "load %s -> %s, steal %.1f%%, CPUs busy %.0f%% (of %d), %d s", l0, l1, 100 * st / dt, 100 * (dt - idle) / dt, cpus, secs }'
}

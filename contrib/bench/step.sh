#!/usr/bin/env bash
# The step-pattern benchmark (docs/runtime.md), one run, side by side: a
# training step's float32 gradients (100 x 16 KiB + 10 x 4 MiB) through
# Tandem's runtime (enqueued back to back, time until all complete), ONE
# fused MPI_Allreduce of the same bytes (Open MPI 4.1 over vader, CMA single
# copy), and torch gloo reducing the tensors one by one; with 2 and 4 ranks
# (4 ranks share the 2 cores). Then the same for the small tensors alone
# (100 x 16 KiB), where fusion and cycle latency, not bandwidth, decide.
#
# Every side binds its ranks to CPUs as a job would (tandem-run --bind plans
# as srun --horovod=on does; mpirun --bind-to core; gloo pins rank blocks):
# unbound, 4 threads of 2 ranks migrate over 2 cores and the timings swing
# widely from run to run. BIND=0 runs everything unbound.
#
#   contrib/bench/step.sh [BUILD_DIR]        (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
nps=${NPS:-2 4}
for x in tandem-run tandem-step-bench mpi-step-bench; do
  [ -x "$build/tools/$x" ] || { echo "step.sh: $build/tools/$x missing: build first" >&2; exit 2; }
done
bind=${BIND:-1}
if [ "$bind" = 1 ]; then run_bind=(--bind); mpi_bind=core:overload-allowed; gloo_bind=(--bind)
else run_bind=(); mpi_bind=none; gloo_bind=(); fi
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to "$mpi_bind" --mca pml ob1
     --mca btl self,vader --mca btl_vader_single_copy_mechanism cma)
for pattern in "-s 100 -l 10" "-s 100 -l 0"; do
  echo "== pattern: $pattern (16K small, 4M large)"
  for np in $nps; do
    # shellcheck disable=SC2086
    t=$("$build/tools/tandem-run" -np "$np" "${run_bind[@]}" "$build/tools/tandem-step-bench" $pattern -n 100)
    # shellcheck disable=SC2086
    m=$("${mpi[@]}" -np "$np" "$build/tools/mpi-step-bench" $pattern -n 100)
    # shellcheck disable=SC2086
    g=$(/usr/bin/python3 "$root/contrib/bench/gloo_step.py" -np "$np" "${gloo_bind[@]}" $pattern 2>/dev/null | tail -1)
    echo "$t"; echo "$m"; echo "$g"
    /usr/bin/python3 - "$t" "$m" "$g" <<'PY'
import sys
med = [float(dict(kv.split("=") for kv in l.split()[1:])["median_us"]) for l in sys.argv[1:]]
print("   tandem/mpi-fused = %.2fx (target <= 1.3x)   gloo/tandem = %.1fx (target >= 20x)"
      % (med[0] / med[1], med[2] / med[0]))
PY
  done
done

#!/usr/bin/env bash
# One run, side by side, float32 sum allreduce on this host: tandem-bench
# (private buffers, and shared-segment buffers in place), Open MPI 4.1's
# MPI_Allreduce over shared memory (vader with CMA single-copy, and without
# single-copy), and torch.distributed gloo; with 2 and with 4 ranks. Prints
# one table per rank count: time per call for each, and tandem's busbw over
# the best Open MPI setting's, with the machine's load average and steal
# time while that table was measured. With REPEAT=n every tool runs n times
# and each size shows its best run (the machine is shared; see
# docs/engine.md).
#
# Ranks are bound to CPUs as a job's are (tandem-run --bind plans as srun
# --horovod=on does; mpirun --bind-to core, 2 ranks per core at 4 ranks);
# BIND=0 runs both unbound. gloo is never bound; GLOO=0 leaves it out.
#
#   contrib/bench/compare.sh [BUILD_DIR]       (default: build)
#   SIZES="-b 16 -e 256M -f 4" LATENCY="-b 8 -e 8" NPS="2 4" REPEAT=1 contrib/bench/compare.sh
# The sweep starts at 16 B so that it lands on 64K, 1M, 16M, 64M and 256M;
# the 8-byte latency point is a second run appended to each tool's output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sweep=${SIZES:--b 16 -e 256M -f 4}
latency=${LATENCY:--b 8 -e 8}
repeat=${REPEAT:-1}  # runs per tool; the table keeps each size's best (lowest) time
nps=${NPS:-2 4}
bind=${BIND:-1}
gloo=${GLOO:-1}
out=$(mktemp -d /tmp/tandem-compare.XXXXXX)
trap 'rm -rf "$out"' EXIT

bench=$build/tools/tandem-bench
run=$build/tools/tandem-run
mpibench=$build/tools/mpi-allreduce-bench
[ -x "$bench" ] && [ -x "$run" ] || { echo "compare.sh: build $build first (ninja -C $build)" >&2; exit 2; }
# shellcheck source=contrib/bench/machine_state.sh
. "$root/contrib/bench/machine_state.sh"

if [ "$bind" = 1 ]; then run_bind=(--bind); mpi_bind=core:overload-allowed
else run_bind=(); mpi_bind=none; fi
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to "$mpi_bind" --mca pml ob1 --mca btl self,vader)

for np in $nps; do
  echo "== $np ranks" >&2
  state_begin
  for _ in $(seq "$repeat"); do for sizes in "$latency" "$sweep"; do
    # shellcheck disable=SC2086
    "$run" -np "$np" "${run_bind[@]}" "$bench" $sizes >> "$out/tandem-$np.txt"
    # shellcheck disable=SC2086
    TANDEM_SHM_ARENA_BYTES=$((512 << 20)) "$run" -np "$np" "${run_bind[@]}" "$bench" -s -i $sizes >> "$out/tandem-shared-$np.txt"
    if [ -x "$mpibench" ]; then
      # shellcheck disable=SC2086
      "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism cma "$mpibench" $sizes >> "$out/mpi-cma-$np.txt"
      # shellcheck disable=SC2086
      "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism none "$mpibench" $sizes >> "$out/mpi-copy-$np.txt"
    fi
    if [ "$gloo" = 1 ]; then
      # shellcheck disable=SC2086
      /usr/bin/python3 "$root/contrib/bench/gloo_allreduce.py" -np "$np" $sizes >> "$out/gloo-$np.txt" 2>/dev/null || true
    fi
  done; done
  state_end > "$out/state-$np.txt"
done

for np in $nps; do
  /usr/bin/python3 "$root/contrib/bench/compare_table.py" \
    --title "float32 sum allreduce, $np ranks, time per call in us (busbw GB/s); ratio = tandem busbw / best Open MPI busbw" \
    --note "$(cat "$out/state-$np.txt"); binding: $([ "$bind" = 1 ] && echo "tandem-run --bind, mpirun --bind-to $mpi_bind" || echo none); best of $repeat" \
    --col "tandem=$out/tandem-$np.txt" --col "tandem -s=$out/tandem-shared-$np.txt" \
    --col "mpi cma=$out/mpi-cma-$np.txt" --col "mpi copy=$out/mpi-copy-$np.txt" --col "gloo=$out/gloo-$np.txt" \
    --ratio "ratio=tandem:mpi cma,mpi copy" --ratio "ratio-s=tandem -s:mpi cma,mpi copy"
done

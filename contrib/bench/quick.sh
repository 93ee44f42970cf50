#!/usr/bin/env bash
# Regression benchmark for the data path, a few minutes long: the ratios
# contrib/bench/compare.sh prints, on fewer sizes and iterations, so that a
# change can be checked against Open MPI before and after. Not a test: the
# machine is shared and timings swing; compare the ratios, run it twice,
# and read the load and steal line under each table (docs/engine.md).
#
# One-node section: float32 sum allreduce, tandem-bench (private buffers)
# against Open MPI 4.1 ob1/vader with CMA single copy and with copy in/out,
# out of place and in place (-i, MPI_IN_PLACE) on both sides, 2 and 4
# ranks, bound as jobs are (tandem-run --bind, mpirun --bind-to core).
# Sizes 8 B-256 KiB at the default iterations, 1-16 MiB at 30 each; ROUNDS
# runs per tool (interleaved), each size keeps its best. Ratios (Tandem's
# busbw over): vs mpi, the better Open MPI setting in the same mode; in the
# in-place table also vs any (the best Open MPI setting in either mode) and
# in/out (Tandem's own out-of-place run); under each table the sizes where
# a ratio is below 1.0.
#
#   contrib/bench/quick.sh [BUILD_DIR]          (default: build)
#   ROUNDS=2 NPS="2 4" MODES="out in" contrib/bench/quick.sh
# (A cross-node section, over the local cluster, can follow the one-node
# one here: see compare-nodes.sh.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${ROUNDS:-2}
nps=${NPS:-2 4}
modes=${MODES:-out in}
bench=$build/tools/tandem-bench
run=$build/tools/tandem-run
mpibench=$build/tools/mpi-allreduce-bench
for x in "$bench" "$run" "$mpibench"; do
  [ -x "$x" ] || { echo "quick.sh: $x missing: build first (ninja -C $build; Open MPI's mpicc for the MPI side)" >&2; exit 2; }
done
# shellcheck source=contrib/bench/machine_state.sh
. "$root/contrib/bench/machine_state.sh"
out=$(mktemp -d /tmp/tandem-quick.XXXXXX)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)

sweeps=("-b 8 -e 256K -f 8" "-b 1M -e 16M -f 4 -n 30 -w 3")
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to core:overload-allowed --mca pml ob1 --mca btl self,vader)

flag() { [ "$1" = in ] && echo -i || true; }

echo "== one node" >&2
for np in $nps; do
  state_begin
  for _ in $(seq "$rounds"); do
    for sizes in "${sweeps[@]}"; do
      for mode in $modes; do
        # shellcheck disable=SC2086
        "$run" -np "$np" --bind "$bench" $(flag "$mode") $sizes >> "$out/tandem-$mode-$np.txt"
        # shellcheck disable=SC2086
        "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism cma "$mpibench" $(flag "$mode") $sizes >> "$out/mpi-cma-$mode-$np.txt"
        # shellcheck disable=SC2086
        "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism none "$mpibench" $(flag "$mode") $sizes >> "$out/mpi-copy-$mode-$np.txt"
      done
    done
  done
  state_end > "$out/state-$np.txt"
done

status=0
for np in $nps; do
  for mode in $modes; do
    t=tandem; [ "$mode" = in ] && t="tandem -i"
    args=(--col "$t=$out/tandem-$mode-$np.txt" --col "mpi cma=$out/mpi-cma-$mode-$np.txt"
          --col "mpi copy=$out/mpi-copy-$mode-$np.txt" --ratio "vs mpi=$t:mpi cma,mpi copy")
    if [ "$mode" = in ] && [[ " $modes " == *" out "* ]]; then
      args+=(--ref "out=$out/tandem-out-$np.txt" --ref "mpi cma out=$out/mpi-cma-out-$np.txt"
             --ref "mpi copy out=$out/mpi-copy-out-$np.txt"
             --ratio "vs any=$t:mpi cma,mpi copy,mpi cma out,mpi copy out" --ratio "in/out=$t:out")
    fi
    table=$(/usr/bin/python3 "$root/contrib/bench/compare_table.py" \
      --title "one node, float32 sum allreduce, $np ranks, $([ "$mode" = in ] && echo "IN PLACE (both sides)" || echo "OUT OF PLACE (both sides)"): time per call in us (busbw GB/s)" \
      --note "$(cat "$out/state-$np.txt"); best of $rounds" "${args[@]}")
    echo "$table"
    grep -q BAD <<<"$table" && status=1
  done
done
echo "quick.sh: $(($(date +%s) - start)) s"
exit $status

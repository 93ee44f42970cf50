#!/usr/bin/env bash
# One run, side by side, float32 sum allreduce on this host, out of place
# and in place (send == recv: MPI_IN_PLACE, Horovod's fusion buffer, DDP's
# buckets): tandem-bench under tandem-run against Open MPI 4.1's
# MPI_Allreduce over shared memory (vader with CMA single-copy, and
# without single-copy), each side in the same mode; optionally tandem-bench
# on shared-segment buffers (SHARED=1: -s -i) and torch.distributed gloo
# (GLOO=1, in place as torch's all_reduce is); with 2 and with 4 ranks.
# Prints, per rank count, an out-of-place table and an in-place table: time
# per call of each tool and Tandem's busbw over
#   vs mpi   the better Open MPI setting in the same mode (like with like);
#   vs any   (in place) the best Open MPI setting in either mode;
#   in/out   (in place) Tandem's own out-of-place run;
# with the machine's load average and steal time while it was measured, and
# under each table the sizes where a ratio is below 1.0. With REPEAT=n every
# tool runs n times, interleaved, and each size shows its best run (the
# machine is shared; see docs/engine.md); STAT=median shows each size's
# median run instead, STAT="best median" both tables (the median is the
# steadier judge where a launch's placement on the vCPUs moves a size by
# more than the tools differ). MODES="in" or MODES="out" measures one mode
# only.
#
# Ranks are bound to CPUs as a job's are (tandem-run --bind plans as srun
# --horovod=on does; mpirun --bind-to core, 2 ranks per core at 4 ranks);
# BIND=0 runs both unbound. gloo is never bound. BUSY=1 runs a busy loop
# per CPU (a shell `while :; do :; done`, unbound) beside every tool for the
# whole measurement, as a data loader's workers sit beside the ranks of a
# training job (docs/engine.md); they end with the script.
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
repeat=${REPEAT:-1}  # runs per tool; the table keeps each size's best (lowest) or median time
stats=${STAT:-best}
for stat in $stats; do
  case $stat in best|median) ;; *) echo "compare.sh: STAT must be best, median or \"best median\", not '$stat'" >&2; exit 2 ;; esac
done
nps=${NPS:-2 4}
modes=${MODES:-out in}
bind=${BIND:-1}
gloo=${GLOO:-0}
shared=${SHARED:-0}
busy=${BUSY:-0}
out=$(mktemp -d /tmp/tandem-compare.XXXXXX)
busy_pids=()
cleanup() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

bench=$build/tools/tandem-bench
run=$build/tools/tandem-run
mpibench=$build/tools/mpi-allreduce-bench
[ -x "$bench" ] && [ -x "$run" ] || { echo "compare.sh: build $build first (ninja -C $build)" >&2; exit 2; }
[ -x "$mpibench" ] || { echo "compare.sh: $mpibench missing (Open MPI's mpicc at build time)" >&2; exit 2; }
# shellcheck source=contrib/bench/machine_state.sh
. "$root/contrib/bench/machine_state.sh"

if [ "$bind" = 1 ]; then run_bind=(--bind); mpi_bind=core:overload-allowed
else run_bind=(); mpi_bind=none; fi
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to "$mpi_bind" --mca pml ob1 --mca btl self,vader)
flag() { [ "$1" = in ] && echo -i || true; }
if [ "$busy" = 1 ]; then
  for _ in $(seq "$(nproc)"); do
    bash -c 'while :; do :; done' &
    busy_pids+=($!)
  done
fi

for np in $nps; do
  echo "== $np ranks" >&2
  state_begin
  for _ in $(seq "$repeat"); do for sizes in "$latency" "$sweep"; do
    # Each tool in both modes back to back, so that a mode's pair shares
    # the machine's conditions.
    for mode in $modes; do
      # shellcheck disable=SC2086
      "$run" -np "$np" "${run_bind[@]}" "$bench" $(flag "$mode") $sizes >> "$out/tandem-$mode-$np.txt"
    done
    for mode in $modes; do
      # shellcheck disable=SC2086
      "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism cma "$mpibench" $(flag "$mode") $sizes >> "$out/mpi-cma-$mode-$np.txt"
    done
    for mode in $modes; do
      # shellcheck disable=SC2086
      "${mpi[@]}" -np "$np" --mca btl_vader_single_copy_mechanism none "$mpibench" $(flag "$mode") $sizes >> "$out/mpi-copy-$mode-$np.txt"
    done
    if [ "$shared" = 1 ]; then
      # shellcheck disable=SC2086
      TANDEM_SHM_ARENA_BYTES=$((512 << 20)) "$run" -np "$np" "${run_bind[@]}" "$bench" -s -i $sizes >> "$out/tandem-shared-$np.txt"
    fi
    if [ "$gloo" = 1 ]; then
      # shellcheck disable=SC2086
      /usr/bin/python3 "$root/contrib/bench/gloo_allreduce.py" -np "$np" $sizes >> "$out/gloo-$np.txt" 2>/dev/null || true
    fi
  done; done
  state_end > "$out/state-$np.txt"
done

note() { echo "$(cat "$out/state-$1.txt"); binding: $([ "$bind" = 1 ] && echo "tandem-run --bind, mpirun --bind-to $mpi_bind" || echo none); $stat of $repeat$([ "$busy" = 1 ] && echo "; a busy loop per CPU beside the ranks")"; }
for stat in $stats; do for np in $nps; do
  if [[ " $modes " == *" out "* ]]; then
    /usr/bin/python3 "$root/contrib/bench/compare_table.py" \
      --title "float32 sum allreduce, $np ranks, OUT OF PLACE (send != recv), time per call in us (busbw GB/s)" \
      --note "$(note "$np")" \
      --col "tandem=$out/tandem-out-$np.txt" \
      --col "mpi cma=$out/mpi-cma-out-$np.txt" --col "mpi copy=$out/mpi-copy-out-$np.txt" \
      --ratio "vs mpi=tandem:mpi cma,mpi copy" --stat "$stat"
  fi
  if [[ " $modes " == *" in "* ]]; then
    cols=(--col "tandem -i=$out/tandem-in-$np.txt"
          --col "mpi cma -i=$out/mpi-cma-in-$np.txt" --col "mpi copy -i=$out/mpi-copy-in-$np.txt")
    ratios=(--ratio "vs mpi=tandem -i:mpi cma -i,mpi copy -i")
    refs=()
    if [[ " $modes " == *" out "* ]]; then
      refs=(--ref "tandem=$out/tandem-out-$np.txt"
            --ref "mpi cma=$out/mpi-cma-out-$np.txt" --ref "mpi copy=$out/mpi-copy-out-$np.txt")
      ratios+=(--ratio "vs any=tandem -i:mpi cma -i,mpi copy -i,mpi cma,mpi copy"
               --ratio "in/out=tandem -i:tandem")
    fi
    [ "$shared" = 1 ] && { cols+=(--col "tandem -s -i=$out/tandem-shared-$np.txt")
                           ratios+=(--ratio "-s vs mpi=tandem -s -i:mpi cma -i,mpi copy -i"); }
    [ "$gloo" = 1 ] && cols+=(--col "gloo=$out/gloo-$np.txt")
    /usr/bin/python3 "$root/contrib/bench/compare_table.py" \
      --title "float32 sum allreduce, $np ranks, IN PLACE (send == recv), time per call in us (busbw GB/s)" \
      --note "$(note "$np")" "${cols[@]}" "${refs[@]}" "${ratios[@]}" --stat "$stat"
  fi
done; done

#!/usr/bin/env bash
# One run, side by side, float32 sum allreduce on this host: tandem-bench
# (private buffers, and shared-segment buffers in place), Open MPI 4.1's
# MPI_Allreduce over shared memory (vader with CMA single-copy, and without
# single-copy), and torch.distributed gloo; with 2 and with 4 ranks. Prints
# one table per rank count: time per call for each, and tandem's busbw over
# the best Open MPI setting's. With REPEAT=n every tool runs n times and each
# size shows its best run (the machine is shared; see docs/engine.md).
#
#   contrib/bench/compare.sh [BUILD_DIR]       (default: build)
#   SIZES="-b 16 -e 256M -f 4" LATENCY="-b 8 -e 8" NPS="2 4" contrib/bench/compare.sh
# The sweep starts at 16 B so that it lands on 64K, 1M, 16M, 64M and 256M;
# the 8-byte latency point is a second run appended to each tool's output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sweep=${SIZES:--b 16 -e 256M -f 4}
latency=${LATENCY:--b 8 -e 8}
repeat=${REPEAT:-1}  # runs per tool; the table keeps each size's best (lowest) time
nps=${NPS:-2 4}
out=$(mktemp -d /tmp/tandem-compare.XXXXXX)
trap 'rm -rf "$out"' EXIT

bench=$build/tools/tandem-bench
run=$build/tools/tandem-run
mpibench=$build/tools/mpi-allreduce-bench
[ -x "$bench" ] && [ -x "$run" ] || { echo "compare.sh: build $build first (ninja -C $build)" >&2; exit 2; }

for np in $nps; do
  echo "== $np ranks" >&2
  for _ in $(seq "$repeat"); do for sizes in "$latency" "$sweep"; do
    # shellcheck disable=SC2086
    "$run" -np "$np" "$bench" $sizes >> "$out/tandem-$np.txt"
    # shellcheck disable=SC2086
    TANDEM_SHM_ARENA_BYTES=$((512 << 20)) "$run" -np "$np" "$bench" -s -i $sizes >> "$out/tandem-shared-$np.txt"
    if [ -x "$mpibench" ]; then
      mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" --mca pml ob1 --mca btl self,vader)
      # shellcheck disable=SC2086
      "${mpi[@]}" --mca btl_vader_single_copy_mechanism cma "$mpibench" $sizes >> "$out/mpi-cma-$np.txt"
      # shellcheck disable=SC2086
      "${mpi[@]}" --mca btl_vader_single_copy_mechanism none "$mpibench" $sizes >> "$out/mpi-copy-$np.txt"
    fi
    # shellcheck disable=SC2086
    /usr/bin/python3 "$root/contrib/bench/gloo_allreduce.py" -np "$np" $sizes >> "$out/gloo-$np.txt" 2>/dev/null || true
  done; done
done

/usr/bin/python3 - "$out" $nps <<'PY'
import sys, os
out, nps = sys.argv[1], sys.argv[2:]
def load(name):
    path = os.path.join(out, name)
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path):
        f = line.split()
        if len(f) >= 8 and not line.startswith("#"):
            size, row = int(f[0]), (float(f[4]), float(f[6]), f[7])
            old = rows.get(size)
            best = row if old is None or row[0] < old[0] else old
            # A failed check in any run is never hidden by a better run.
            bad = [r[2] for r in (old, row) if r and r[2] not in ("ok", "-")]
            rows[size] = (best[0], best[1], bad[0] if bad else best[2])
    return rows
def size_name(b):
    for unit, s in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= s and b % s == 0:
            return f"{b // s}{unit}"
    return str(b)
for np_ in nps:
    cols = [("tandem", f"tandem-{np_}.txt"), ("tandem -s", f"tandem-shared-{np_}.txt"),
            ("mpi cma", f"mpi-cma-{np_}.txt"), ("mpi copy", f"mpi-copy-{np_}.txt"), ("gloo", f"gloo-{np_}.txt")]
    data = [(n, load(f)) for n, f in cols]
    sizes = sorted(set().union(*[d.keys() for _, d in data]))
    print(f"\nfloat32 sum allreduce, {np_} ranks, time per call in us (busbw GB/s); ratio = tandem busbw / best Open MPI busbw")
    print("%6s" % "size" + "".join("%20s" % n for n, _ in data) + "%8s %8s" % ("ratio", "ratio-s"))
    for s in sizes:
        cells = []
        for _, d in data:
            cells.append("%20s" % (f"{d[s][0]:.1f} ({d[s][1]:.2f})" + ("" if d[s][2] in ("ok", "-") else " BAD")
                                   if s in d else "-"))
        mpi = max([d[s][1] for n, d in data if n.startswith("mpi") and s in d] or [0])
        ratio = lambda k: ("%8.2f" % (data[k][1][s][1] / mpi)) if mpi and s in data[k][1] else "%8s" % "-"
        # At tiny sizes busbw rounds to 0: compare times instead (MPI best / tandem).
        if mpi == 0 or data[0][1].get(s, (0, 0))[1] < 0.01:
            best = min([d[s][0] for n, d in data if n.startswith("mpi") and s in d] or [0])
            r0 = ("%8.2f" % (best / data[0][1][s][0])) if best and s in data[0][1] else "%8s" % "-"
            r1 = ("%8.2f" % (best / data[1][1][s][0])) if best and s in data[1][1] else "%8s" % "-"
            print("%6s" % size_name(s) + "".join(cells) + r0 + " " + r1 + " (time)")
        else:
            print("%6s" % size_name(s) + "".join(cells) + ratio(0) + " " + ratio(1))
PY

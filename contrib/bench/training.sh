#!/usr/bin/env bash
# Training throughput, side by side in one run: examples/pytorch_synthetic_benchmark.py
# (horovod.torch on Tandem) against examples/ddp_synthetic_benchmark.py (torch
# DistributedDataParallel over gloo), same model, batch (32 per rank),
# iterations and torch threads (1 per rank). Both are launched the same way:
# `srun -N NODES -n NP --horovod=on PYTHON script` on the local Slurm cluster
# (started here and always stopped), so both get the plugin's CPU binding,
# and DDP gets its env:// rendezvous (MASTER_ADDR, MASTER_PORT, RANK, ...)
# from the plugin like any unmodified DDP script. Runs are interleaved
# (Tandem, DDP, Tandem, DDP, ... per model and rank count), ROUNDS times; the
# load average is read before each pair. Prints one line per pair and a
# markdown table (images/s in total, per run; ratio range Tandem/DDP).
# Needs root (the cluster uses network namespaces).
#
#   contrib/bench/training.sh [BUILD_DIR]        (default: build)
#   PYTHON=/opt/tandem-deps/torch2/bin/python NPS="2 4" MODELS="mnist vgg" \
#     ROUNDS=2 ITERS=3 NODES=1 BINDING=auto contrib/bench/training.sh
# BINDING=none starts the cluster with the plugin's binding=none (tasks not
# bound to CPUs), to separate the binding's effect from the rest.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
python=${PYTHON:-/opt/tandem-deps/torch2/bin/python}
nps=${NPS:-2 4}
models=${MODELS:-mnist vgg}
rounds=${ROUNDS:-2}
iters=${ITERS:-3}
nodes=${NODES:-1}
binding=${BINDING:-auto}
[ "$(id -u)" -eq 0 ] || { echo "training.sh: needs root (the cluster uses network namespaces)" >&2; exit 2; }
[ -x "$python" ] || { echo "training.sh: PYTHON=$python is not an executable" >&2; exit 2; }
[ -f "$build/plugin/tandem_spank.so" ] || { echo "training.sh: build first (ninja -C $build)" >&2; exit 2; }

name=train$$
cdir=$build/cluster/$name
out=$(mktemp -d /tmp/tandem-training.XXXXXX)
trap '"$root/contrib/cluster/stop.sh" --name "$name" --dir "$cdir" --build "$build" >/dev/null || true; rm -rf "$out"' EXIT
"$root/contrib/cluster/start.sh" --name "$name" --dir "$cdir" --build "$build" \
  --nodes "$nodes" --cpus 8 --gpus 0 --plugin-arg "binding=$binding" >&2
export SLURM_CONF=$cdir/slurm.conf
# torch 2.x's c10d looks up each store peer's host name; the cluster's
# namespaces reach no DNS server (tests/e2e/test_python.py). Not timed, but slow.
export RES_OPTIONS="timeout:1 attempts:1"

echo "python: $python ($("$python" -c 'import torch; print("torch", torch.__version__)'))"
echo "host: $(nproc) CPUs; srun -N $nodes -n NP --horovod=on (plugin binding=$binding); --num-iters $iters; $rounds rounds"
run() {  # run NP SCRIPT MODEL -> total images/s
  local np=$1 script=$2 model=$3 log
  log=$out/run.log
  srun --immediate=60 -N "$nodes" -n "$np" --horovod=on "$python" "$root/examples/$script" \
    --model "$model" --num-iters "$iters" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  sed -n 's/^Total img\/sec on [0-9]* rank(s): \([0-9.]*\)$/\1/p' "$log" | tail -1
}
results=$out/results
for round in $(seq 1 "$rounds"); do
  for model in $models; do
    for np in $nps; do
      load=$(cut -d' ' -f1-3 /proc/loadavg)
      t=$(run "$np" pytorch_synthetic_benchmark.py "$model")
      d=$(run "$np" ddp_synthetic_benchmark.py "$model")
      echo "round $round  $np ranks  $model  tandem $t  ddp $d  ratio $(awk -v a="$t" -v b="$d" 'BEGIN{printf "%.2f", a/b}')  load $load"
      echo "$np $model $t $d $load" >>"$results"
    done
  done
done
echo
echo "| ranks | model | Tandem (horovod.torch) | torch DDP over gloo | ratio | load (1 min) |"
echo "|---|---|---|---|---|---|"
for model in $models; do
  for np in $nps; do
    awk -v np="$np" -v m="$model" '
      $1 == np && $2 == m { t = t sep sprintf("%.0f", $3); d = d sep sprintf("%.0f", $4);
        r = $3 / $4; if (n == 0 || r < lo) lo = r; if (n == 0 || r > hi) hi = r;
        l = l sep $5; sep = ", "; n++ }
      END { printf "| %s | %s | %s | %s | %.2f-%.2fx | %s |\n", np, m, t, d, lo, hi, l }' "$results"
  done
done

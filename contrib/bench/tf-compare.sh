#!/usr/bin/env bash
# Training throughput, horovod.tensorflow on Tandem vs TensorFlow's own
# MultiWorkerMirroredStrategy (CPU, collective ops over gRPC, RING), side by
# side in one run: the same Keras model, per-rank batch, GradientTape step in
# tf.function and timing (examples/tensorflow2_synthetic_benchmark.py and
# contrib/bench/tf_mwms_synthetic_benchmark.py), runs interleaved, both
# launched by tandem-run (which gives MWMS its TF_CONFIG layout), each rank
# bound as srun --horovod=on would bind it (BIND=0: unbound). Prints total
# images/sec of each side, their ratio, each side's CPU ms per step per rank
# (process CPU time: what a step costs, which waiting on a loaded machine
# does not inflate) and the load average before each pair.
#
#   contrib/bench/tf-compare.sh [BUILD_DIR]      (default: build)
#   NPS="2 4" MODELS="mnist vgg" ROUNDS=2 ITERS=3 TF_PYTHON=... contrib/bench/tf-compare.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
py=${TF_PYTHON:-/opt/tandem-deps/tf/bin/python}
nps=${NPS:-2 4}
models=${MODELS:-mnist vgg}
rounds=${ROUNDS:-2}
iters=${ITERS:-3}
bind=()
[ "${BIND:-1}" = 1 ] && bind=(--bind)
[ -x "$build/tools/tandem-run" ] || { echo "tf-compare.sh: $build/tools/tandem-run missing: build first" >&2; exit 2; }
"$py" -c "import tensorflow" 2>/dev/null || { echo "tf-compare.sh: $py cannot import tensorflow (TF_PYTHON=...)" >&2; exit 2; }
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" TF_CPP_MIN_LOG_LEVEL=2

figures() {  # "<total img/sec> <CPU ms per step per rank>" of a run's output
  awk '/^Total img\/sec on/ { t = $NF } /^CPU ms per step per rank:/ { c = $NF }
       END { print (t == "" ? "FAILED" : t), (c == "" ? "-" : c) }'
}

printf "%-5s %-6s %-5s %10s %10s %7s %11s %11s   %s\n" ranks model round tandem mwms ratio \
  "tandem cpu" "mwms cpu" "load (1/5/15 min)"
port=23456
for model in $models; do
  for np in $nps; do
    for round in $(seq "$rounds"); do
      load=$(cut -d' ' -f1-3 /proc/loadavg)
      read -r t tc < <("$build/tools/tandem-run" -np "$np" "${bind[@]}" --timeout 900 "$py" \
            "$root/examples/tensorflow2_synthetic_benchmark.py" --model "$model" \
            --num-iters "$iters" 2>/dev/null | figures)
      port=$((port + 16))  # a fresh port range: the last run's sockets may linger
      read -r m mc < <("$build/tools/tandem-run" -np "$np" "${bind[@]}" --timeout 900 "$py" \
            "$root/contrib/bench/tf_mwms_synthetic_benchmark.py" --model "$model" \
            --num-iters "$iters" --port "$port" 2>/dev/null | figures)
      ratio=$(awk -v t="$t" -v m="$m" 'BEGIN { if (m + 0 > 0 && t + 0 > 0) printf "%.2fx", t / m; else print "n/a" }')
      printf "%-5s %-6s %-5s %10s %10s %7s %11s %11s   %s\n" "$np" "$model" "$round" "$t" "$m" \
        "$ratio" "$tc" "$mc" "$load"
    done
  done
done

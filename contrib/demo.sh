#!/usr/bin/env bash
# The README's demo: on a fresh Debian 12 machine, installs what is missing,
# builds, starts a local 3-node Slurm cluster and runs, through the plugin:
#   srun -N 2 -n 4 --horovod=verbose tandem-whoami          (each task's identity)
#   srun -N 2 -n 4 --horovod=on python3 examples/pytorch_mnist.py
# (an unmodified Horovod-style script training a CNN on synthetic MNIST-shaped
# data: the loss falls and the throughput is printed), then stops the cluster.
#
#   contrib/demo.sh            # BUILD=dir for another build directory
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
name=demo$$
cd "$root"

"$root/contrib/install-deps.sh"

echo "== build ($build)"
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true -Dcuda=auto >/dev/null
fi
ninja -C "$build" >/dev/null

echo "== local cluster"
trap '"$root/contrib/cluster/stop.sh" --name "$name" --build "$build"' EXIT
"$root/contrib/cluster/start.sh" --name "$name" --build "$build" --nodes 3 --cpus 8 --gpus 4
export SLURM_CONF=$build/cluster/$name/slurm.conf

echo "== srun -N 2 -n 4 --horovod=verbose tandem-whoami"
# stdout: tandem-whoami per task; stderr: the plugin's verbose line per task.
srun --immediate=30 -N 2 -n 4 --ntasks-per-node=2 --gpus-per-node=2 --horovod=verbose \
  "$build/tools/tandem-whoami" 2>&1 | sort

echo "== srun -N 2 -n 4 --horovod=on python3 examples/pytorch_mnist.py"
# Nothing Horovod-specific is installed: the plugin preloads libtandem and puts
# the tandem/horovod packages of the build on PYTHONPATH.
srun --immediate=30 -N 2 -n 4 --ntasks-per-node=2 --horovod=on \
  /usr/bin/python3 "$root/examples/pytorch_mnist.py" --epochs 2 --steps ${DEMO_STEPS:-120}

echo "== srun -N 2 -n 4 --horovod=on <tf venv>/python examples/tensorflow2_keras_mnist.py"
# A Horovod-style TF2 Keras script (import horovod.tensorflow.keras as hvd) on
# TensorFlow 2.21 + Keras 3, from the venv install-deps.sh made.
srun --immediate=30 -N 2 -n 4 --ntasks-per-node=2 --horovod=on \
  "${TANDEM_DEPS:-/opt/tandem-deps}/tf/bin/python" "$root/examples/tensorflow2_keras_mnist.py" \
  --epochs 2 --steps-per-epoch ${DEMO_KERAS_STEPS:-96} --batch-size 32 --verbose 0

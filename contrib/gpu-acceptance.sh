#!/usr/bin/env bash
# GPU acceptance: what a site runs on a GPU node or inside a GPU allocation
# (e.g. `salloc -N1 --gpus=4` then `srun -N1 --gpus=4 contrib/gpu-acceptance.sh`)
# after building with -Dcuda=enabled. Nothing here has run on a GPU in
# Tandem's CI (there is none); docs/gpu.md says what has been verified where.
#
#   BUILD=dir contrib/gpu-acceptance.sh     # default build dir: build
#
# Every stage must pass: a skip counts as a failure here, since the point is
# to prove the GPU path on real hardware.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
failed=0; results=()
record() { results+=("$1: $2"); [ "$2" = ok ] || failed=$((failed + 1)); }

echo "== 1. the GPU path is available (libraries, driver, devices)"
cat > /tmp/tandem-gpu-probe.$$.c <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int c, char **v) {
  void *l = dlopen(v[1], RTLD_NOW); if (!l) { puts(dlerror()); return 1; }
  int (*f)(const char **) = (int (*)(const char **))dlsym(l, "tandem_gpu_available");
  const char *r = 0; int a = f(&r); printf("available=%d: %s\n", a, r); return a == 1 ? 0 : 1;
}
C
if cc -o /tmp/tandem-gpu-probe.$$ /tmp/tandem-gpu-probe.$$.c -ldl &&
   /tmp/tandem-gpu-probe.$$ "$build/engine/libtandem.so"; then record probe ok; else record probe FAILED; fi
rm -f /tmp/tandem-gpu-probe.$$ /tmp/tandem-gpu-probe.$$.c

echo "== 2. NCCL collectives on device buffers, one rank per visible GPU, results checked"
"$build/tests/unit/gpu/gpu_device_test"; rc=$?
case $rc in 0) record gpu-device-test ok ;; 77) record gpu-device-test "SKIPPED (no usable GPU: see stage 1)" ;;
  *) record gpu-device-test FAILED ;; esac

echo "== 3. the runtime with GPU tensors: tandem-bench --device cuda, every collective checked"
if srun --horovod=on "$build/tools/tandem-bench" --device cuda -c all; then record bench ok; else record bench FAILED; fi
echo "== 3b. the same over 1 and all GPUs of this node without srun (tandem-run)"
"$root/tests/unit/runtime/gpu_job.sh" "$build/tools/tandem-run" "$build/tools/tandem-bench"; rc=$?
case $rc in 0) record runtime-gpu-job ok ;; 77) record runtime-gpu-job "SKIPPED (no GPU visible)" ;;
  *) record runtime-gpu-job FAILED ;; esac

echo "== 4. the training example on CUDA"
example=$root/examples/pytorch_mnist.py
if [ -f "$example" ] && /usr/bin/python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  if srun --horovod=on /usr/bin/python3 "$example" --cuda --epochs 1; then record train ok; else record train FAILED; fi
else
  record train "NOT AVAILABLE (no $example or torch without CUDA)"
fi

echo "== summary"; printf '  %s\n' "${results[@]}"
[ "$failed" -eq 0 ]

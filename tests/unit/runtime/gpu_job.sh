#!/bin/sh
# The runtime with GPU tensors for real: one process per visible GPU
# (tandem-run), every collective through negotiation, fusion and NCCL, each
# result checked (tandem-bench --device cuda). Exit 77 (SKIP) where there is
# no GPU; a GPU that is visible but unusable by Tandem is a failure.
#   gpu_job.sh TANDEM_RUN TANDEM_BENCH
run=$1 bench=$2
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -eq 0 ]; then
  echo "SKIP: no GPU visible (nvidia-smi lists none); this test runs on GPU nodes"
  exit 77
fi
for np in 1 "$gpus"; do
  "$run" -np "$np" --timeout 240 "$bench" --device cuda -c all -b 8 -e 4194304 -n 5 || exit 1
done

"""Autotune in a horovod.torch training run (docs/runtime.md, "Autotune").

The MNIST example trained on 2 ranks with HOROVOD_AUTOTUNE=1 and a budget
small enough to settle within the run must write Horovod's log (its
header, a row per scored sample, the best row last) and end with the same
parameters as the run without autotune: the tuner changes how tensors are
batched and fused, never what is summed (with 2 ranks each element is one
float32 addition whichever way the tensors are fused, so the two runs agree
to the last bit; the tolerance only guards against a platform's fused
multiply-add in the optimizer).
"""

import torch

from conftest import ROOT, WORKERS

EXAMPLE = ROOT / "examples" / "pytorch_mnist.py"
WITHOUT_ONEDNN = WORKERS / "without_onednn.py"
COMMON = ["--steps", "40", "--batch-size", "16", "--dropout", "0", "--no-scale-lr",
          "--num-samples", "2048", "--log-interval", "1000", "--lr", "0.01"]
HEADER = ("hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
          "cycle_time_ms,tensor_fusion_threshold,score")
MAX_SAMPLES = 3


def test_autotuned_training_logs_horovods_rows_and_trains_the_same(ranks, tmp_path):
    plain = tmp_path / "plain.pt"
    r = ranks.run(2, WITHOUT_ONEDNN, EXAMPLE, "--save", str(plain), *COMMON)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    tuned, log = tmp_path / "tuned.pt", tmp_path / "autotune.csv"
    r = ranks.run(2, WITHOUT_ONEDNN, EXAMPLE, "--save", str(tuned), *COMMON,
                  env={"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": str(log),
                       "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "0",
                       "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "1",
                       "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": str(MAX_SAMPLES)})
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    rows = log.read_text().splitlines()
    assert rows[0] == HEADER
    # The joint samples, the cache tried the other way, the best row again.
    assert len(rows) == 1 + MAX_SAMPLES + 1 + 1, rows
    values = [row.split(",") for row in rows[1:]]
    assert all(len(v) == 7 and float(v[6]) > 0 for v in values), rows
    assert rows[1].startswith("1,0,0, 1,0.5,128,"), "the first sample runs the defaults"
    assert values[-1] in values[:-1], "the last row is one of the samples, the best"
    assert float(values[-1][6]) == max(float(v[6]) for v in values[:-1])
    a, b = torch.load(plain), torch.load(tuned)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= 1e-6, "autotune changed the training result by %g" % worst

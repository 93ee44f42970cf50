"""Autotune in a horovod.torch training run (docs/runtime.md, "Autotune").

The MNIST example (through tests/python/workers/autotune_train.py, which
then writes each rank's tandem.autotune_state()) trained on 2 ranks with
HOROVOD_AUTOTUNE=1 and a budget small enough to settle within the run must
write Horovod's log (its header, a row per scored sample, the best row
last), every rank must have applied the same values after the same cycles,
and the run must end with the same parameters as the run without
autotune: the tuner changes how tensors are batched and fused, never what
is summed (with 2 ranks each element is one float32 addition whichever
way the tensors are fused, so the two runs agree to the last bit; the
tolerance only guards against a platform's fused multiply-add in the
optimizer).
"""

import json

import torch

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "pytorch_mnist.py"
COMMON = ["--steps", "40", "--batch-size", "16", "--dropout", "0", "--no-scale-lr",
          "--num-samples", "2048", "--log-interval", "1000", "--lr", "0.01"]
HEADER = ("hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
          "cycle_time_ms,tensor_fusion_threshold,score")
MAX_SAMPLES = 3


def test_autotuned_training_logs_horovods_rows_and_trains_the_same(ranks, tmp_path):
    plain = tmp_path / "plain.pt"
    r = ranks.run(2, "autotune_train.py", plain, EXAMPLE, "--save", str(plain), *COMMON)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    tuned, log = tmp_path / "tuned.pt", tmp_path / "autotune.csv"
    r = ranks.run(2, "autotune_train.py", tuned, EXAMPLE, "--save", str(tuned), *COMMON,
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
    # Every rank applied the same values after the same cycles: one change
    # per scored sample (the last settles).
    states = [json.loads((tmp_path / ("tuned.pt.rank%d.json" % k)).read_text()) for k in (0, 1)]
    assert states[0] == states[1], states
    assert states[0]["on"] and states[0]["settled"], states[0]
    assert len(states[0]["applied"]) == MAX_SAMPLES + 1, states[0]
    assert json.loads((tmp_path / "plain.pt.rank0.json").read_text()) == \
        {"on": False, "settled": False, "applied": []}
    a, b = torch.load(plain), torch.load(tuned)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= 1e-6, "autotune changed the training result by %g" % worst

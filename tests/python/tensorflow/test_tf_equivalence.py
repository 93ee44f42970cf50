"""Data parallelism changes nothing but the arithmetic order, for a
GradientTape loop in tf.function (workers/check_tf_train.py).

4 ranks with a per-rank batch of B train on the same samples, step by step,
as one process with a batch of 4B: each rank's loss is the mean over its B
samples and DistributedGradientTape averages the 4 gradients, i.e. the mean
over 4B. So after a few SGD steps both end with the same weights up to
float32 round-off, and the 4 ranks end with bitwise identical weights (the
engine gives every rank the same bits; each applies the same update).

Tolerance: 1e-5 absolute on every weight (|w| ~ 0.01-0.5). The two runs sum
the same float32 products in a different order (4 partial means then an
average, against one mean over 4B), and oneDNN picks other convolution
algorithms for another batch size: measured in one process without Tandem,
the mean of the 4 shard gradients differs from the batch-of-64 gradient by
up to 3.6e-7 (2.6e-6 relative). Over 5 steps of plain SGD with lr 0.01
that moves weights by ~1e-8 (measured: 1.5e-8, the same in one process
averaging 4 shards). Larger steps amplify it (lr 0.05 with momentum 0.9:
3.3e-5, again the same without Tandem), hence these settings. A real fault
is orders of magnitude larger: the run moves weights by ~5e-3, one step by
~lr * |grad| ~ 1e-3, so a missing, doubled or unaveraged reduction, a wrong
shard or an unbroadcast start exceeds 1e-5 at the first step.
"""

import subprocess
import sys

import numpy as np

from conftest import WORKERS

STEPS, BATCH, TOLERANCE = 5, 16, 1e-5


def _weights(path):
    with np.load(path) as f:
        return [f["arr_%d" % i] for i in range(len(f.files))]


def test_four_ranks_of_b_equal_one_process_of_4b(ranks, py_env, tmp_path):
    one, four = tmp_path / "one", tmp_path / "four"
    one.mkdir()
    four.mkdir()
    r = subprocess.run([sys.executable, str(WORKERS / "check_tf_train.py"), "--batch-size",
                        str(4 * BATCH), "--steps", str(STEPS), "--out", str(one)],
                       capture_output=True, text=True, env=py_env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = ranks.run(4, "check_tf_train.py", "--batch-size", BATCH, "--steps", STEPS,
                  "--out", four, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    ref = _weights(one / "rank0.npz")
    per_rank = [_weights(four / ("rank%d.npz" % k)) for k in range(4)]
    for k, weights in enumerate(per_rank[1:], 1):
        for i, (a, b) in enumerate(zip(weights, per_rank[0])):
            assert np.array_equal(a, b), "weight %d differs between rank 0 and rank %d" % (i, k)
    worst = max(float(np.abs(a - b).max()) for a, b in zip(per_rank[0], ref))
    assert worst <= TOLERANCE, "4 x %d differs from 1 x %d by %g" % (BATCH, 4 * BATCH, worst)
    # The runs did train: untouched weights would also "match".
    start = _weights(one / "initial.npz")
    moved = max(float(np.abs(a - b).max()) for a, b in zip(ref, start))
    assert moved > 100 * TOLERANCE, "training moved weights by only %g" % moved
    assert np.array_equal(_weights(four / "initial.npz")[0], start[0]), \
        "rank 0 of both runs must start from the same seed"

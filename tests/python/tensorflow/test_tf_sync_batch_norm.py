"""hvd.SyncBatchNormalization (horovod.tensorflow) on 2 and 3 ranks
equals the process's BatchNormalization over every rank's batch
concatenated: outputs, moving statistics, gradients, eagerly and in a
tf.function, with batches of equal and of different sizes
(workers/check_tf_sync_batch_norm.py). Runs on the Keras of each TF venv."""

import pytest

from conftest import assert_passed
from workers import check_tf_sync_batch_norm

JOBS = {}


def job(ranks, np):
    if np not in JOBS:
        JOBS[np] = ranks.run(np, "check_tf_sync_batch_norm.py", timeout=300)
    return JOBS[np]


@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_tf_sync_batch_norm.CHECKS])
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)

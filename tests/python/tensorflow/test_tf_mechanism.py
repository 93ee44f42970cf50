"""What the mechanism behind tandem.tensorflow does and refuses, as
docs/tensorflow.md states it (workers/check_tf_mechanism.py): no copy in or
out of the engine, XLA and several local tf.distribute replicas refused with
UnsupportedError (also through AutoGraph), a SavedModel holding a collective
runs only in the process that traced it. On 1 and 2 ranks."""

import pytest

from conftest import assert_passed
from workers import check_tf_mechanism

JOBS = {}


def job(ranks, np):
    if np not in JOBS:
        JOBS[np] = ranks.run(np, "check_tf_mechanism.py", timeout=600)
    return JOBS[np]


@pytest.mark.parametrize("np", [1, 2])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_tf_mechanism.CHECKS])
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)

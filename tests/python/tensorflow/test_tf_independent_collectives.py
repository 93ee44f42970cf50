"""200 independent collectives in one graph complete with 1 and 2 inter-op
threads, eagerly, in tf.function and in a TF1 session where every rank
creates them in another order; a mismatch among them fails with
FailedPreconditionError on every rank and the next run works
(workers/check_tf_independent_collectives.py), on 2 and 3 ranks. With ops
that hold an inter-op thread while they wait for their peers, the session
checks end in the engine's deadlock error."""

import pytest

from conftest import assert_passed
from workers import check_tf_independent_collectives

JOBS = {}


def job(ranks, np, threads):
    if (np, threads) not in JOBS:
        JOBS[np, threads] = ranks.run(np, "check_tf_independent_collectives.py", threads,
                                      timeout=600)
    return JOBS[np, threads]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_tf_independent_collectives.CHECKS])
def test_check_passes_on_every_rank(ranks, np, threads, name):
    assert_passed(job(ranks, np, threads), np, name)

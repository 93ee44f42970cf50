"""Diverged ranks through horovod.tensorflow (eagerly) fail on every rank
with one message naming each rank's wait, caught as
horovod.common.exceptions.HorovodInternalError, the job works again after
shutdown/init, and a slow rank is not a deadlock (workers/deadlock.py, as
tests/python/test_torch_deadlock.py runs it through horovod.torch); 2 and 3
ranks under tandem-run."""

import pytest


@pytest.mark.parametrize("np", [2, 3])
def test_diverged_ranks_fail_and_a_slow_rank_does_not(deadlock_job, np):
    deadlock_job(np, "tensorflow", timeout=300)

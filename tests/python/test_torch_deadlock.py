"""Diverged ranks through horovod.torch fail on every rank with one message
naming each rank's wait (workers/deadlock.py), the job works again after
shutdown/init, and a slow rank is not a deadlock; 2 and 3 ranks under
tandem-run. The same worker runs under srun in tests/e2e/test_deadlock.py."""

import pytest


@pytest.mark.parametrize("np", [2, 3])
def test_diverged_ranks_fail_and_a_slow_rank_does_not(deadlock_job, np):
    deadlock_job(np, "torch", timeout=200)

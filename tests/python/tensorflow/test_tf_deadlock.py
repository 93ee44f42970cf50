"""Diverged ranks through horovod.tensorflow (eagerly) fail on every rank
with one message naming each rank's wait, caught as
horovod.common.exceptions.HorovodInternalError, the job works again after
shutdown/init, and a slow rank is not a deadlock (workers/deadlock.py, as
tests/python/test_deadlock.py runs it through horovod.torch); 2 and 3
ranks under tandem-run."""

import re

import pytest

CHECKS = ["diverged", "init_again", "slow_rank"]


@pytest.mark.parametrize("np", [2, 3])
def test_diverged_ranks_fail_and_a_slow_rank_does_not(ranks, np):
    result = ranks.run(np, "deadlock.py", "tensorflow", timeout=300,
                       env={"TANDEM_DEADLOCK_CHECK_SECONDS": "0.5"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    for check in CHECKS:
        passed = sorted(int(r) for r in re.findall(
            r"^(?:\[\d+\] )?deadlock PASS %s rank (\d+)$" % check, result.stdout, re.M))
        assert passed == list(range(np)), (check, out[-4000:])
    messages = set(re.findall(r"deadlock message rank \d+: (.*)$", result.stdout, re.M))
    assert len(messages) == 1, "one message on every rank: %s" % messages

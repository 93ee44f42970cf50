"""Every horovod.torch call on several ranks started by tandem-run.

The worker (workers/check_api.py) runs all checks in one job per world size;
each test below asserts that one check passed on every rank, so a failure
names the call that broke. World sizes: 1 (the world of one a plain
``python train.py`` gets) and 3 (odd, so uneven splits and non-power-of-two
paths are taken).
"""

import pytest

from conftest import assert_passed
from workers import check_api

JOBS = {}


def job(ranks, np):
    if np not in JOBS:
        JOBS[np] = ranks.run(np, "check_api.py")
    return JOBS[np]


@pytest.mark.parametrize("np", [1, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_api.CHECKS])
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)

"""The dtype x collective x shape sweep (workers/sweep_dtypes.py) through
horovod.tensorflow.keras's value collectives on 1, 2 and 3 ranks, against a
numpy reference (Horovod's keras module has no alltoall or grouped call)."""

import pytest

from conftest import assert_passed, sweep
from workers import sweep_dtypes


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in sweep_dtypes.CHECKS])
def test_sweep(ranks, np, name):
    assert_passed(sweep(ranks, np, "keras"), np, name)

"""Every collective x dtype x shape through horovod.torch against a numpy
reference, on 1, 2 and 3 ranks (workers/sweep_dtypes.py torch; uint16,
uint32 and uint64 where torch has them, 2.3 on)."""

import pytest

from conftest import assert_passed, sweep
from workers import sweep_dtypes


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in sweep_dtypes.CHECKS])
def test_sweep(ranks, np, name):
    assert_passed(sweep(ranks, np, "torch"), np, name)

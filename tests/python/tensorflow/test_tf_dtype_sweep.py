"""The dtype x collective x shape sweep (workers/sweep_dtypes.py) through
horovod.tensorflow, eagerly and in tf.function, on 1, 2 and 3 ranks, against
a numpy reference."""

import pytest

from conftest import assert_passed, sweep
from workers import sweep_dtypes


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in sweep_dtypes.CHECKS])
def test_sweep(ranks, np, name):
    assert_passed(sweep(ranks, np, "tensorflow"), np, name)

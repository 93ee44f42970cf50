"""Every collective x dtype x shape through the framework-neutral core
(tandem._arrays, which tandem.tensorflow and tandem.keras use), against a
numpy reference, on 1, 2 and 3 ranks (workers/sweep_dtypes.py numpy). Each
test asserts one check passed on every rank. The frontends run the same
sweep: test_torch_dtype_sweep.py, tensorflow/test_tf_dtype_sweep.py,
tensorflow/test_keras_dtype_sweep.py."""

import pytest

from conftest import assert_passed, sweep
from workers import sweep_dtypes


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in sweep_dtypes.CHECKS])
def test_sweep(ranks, np, name):
    assert_passed(sweep(ranks, np, "numpy"), np, name)

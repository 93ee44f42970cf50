"""Every collective x dtype x shape through the framework-neutral core
(tandem._arrays) and horovod.torch, against a numpy reference, on 1, 2 and 3
ranks (workers/sweep_dtypes.py; the TensorFlow and Keras frontends run the
same sweep in tensorflow/test_tf_dtype_sweep.py). One job per frontend and
world size; each test asserts one check passed on every rank."""

import pytest

from conftest import assert_passed, sweep
from workers import sweep_dtypes


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("frontend", ["numpy", "torch"])
@pytest.mark.parametrize("name", [fn.__name__ for fn in sweep_dtypes.CHECKS])
def test_sweep(ranks, np, frontend, name):
    assert_passed(sweep(ranks, np, frontend), np, name)

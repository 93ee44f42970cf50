"""Every tandem.keras2 feature (Horovod's Keras API on Keras 2) on 1, 2 and
3 ranks started by tandem-run (workers/check_keras2.py, which checks values
against what every rank contributed). Runs where the interpreter's Keras is
Keras 2: the tfkeras venv (meson sets TF_USE_LEGACY_KERAS=1) and the tf215
venv; elsewhere it is skipped, saying why (test_keras_api.py checks Keras 3).

One job per world size runs all checks; each test asserts that one check
passed on every rank, so a failure names what broke.
"""

import pytest

from tandem._which_keras import keras2

if keras2() is None:
    pytest.skip("this interpreter's Keras is Keras 3 (tandem.keras2 serves Keras 2: "
                "tf_keras with TF_USE_LEGACY_KERAS=1, or TensorFlow <= 2.15)",
                allow_module_level=True)

from conftest import assert_passed
from workers import check_keras2

ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}
JOBS = {}


def job(ranks, np):
    if np not in JOBS:
        JOBS[np] = ranks.run(np, "check_keras2.py", timeout=900, env=ENV)
    return JOBS[np]


@pytest.mark.parametrize("np,name", [(np, fn.__name__) for np in (1, 2, 3)
                                     for fn in check_keras2.CHECKS if np >= fn.min_size])
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)

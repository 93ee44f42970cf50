"""Every tandem.keras feature under the TensorFlow backend on 1, 2 and 3
ranks started by tandem-run (workers/check_keras.py, which checks values
against what every rank contributed), and model.fit on 4 ranks of batch B
against one process of batch 4B.

One job per world size runs all checks; each test asserts that one check
passed on every rank, so a failure names what broke. Checks that need
several ranks (a mismatch, a process set) are not listed for one rank.
"""

import os
import re

import pytest

from tandem._which_keras import keras2

if keras2() is not None:
    pytest.skip("this interpreter's Keras is Keras 2 %s (test_keras2_ranks.py checks it; "
                "these checks are Keras 3's)" % keras2().__version__, allow_module_level=True)

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
from conftest import assert_passed
from workers import check_keras

ENV = {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
JOBS = {}


def job(ranks, np, only=None):
    key = (np, only)
    if key not in JOBS:
        args = ["--only", only] if only else []
        JOBS[key] = ranks.run(np, "check_keras.py", *args, timeout=900, env=ENV)
    return JOBS[key]


CASES = [(np, fn.__name__) for np in (1, 2, 3) for fn in check_keras.CHECKS
         if "tensorflow" in fn.backends and np >= fn.min_size]


@pytest.mark.parametrize("np,name", CASES)
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)


def test_four_ranks_of_b_equal_one_process_of_4b(ranks):
    name = "fit_equals_one_process_of_size_times_batch"
    result = job(ranks, 4, only=name)
    assert_passed(result, 4, name)
    assert len(re.findall(r"^equivalence tensorflow run_eagerly=(True|False): 4 x 4 vs 1 x 16",
                          result.stdout, re.M)) == 2, result.stdout[-3000:]

"""tandem.keras under Keras 3's torch backend (KERAS_BACKEND=torch): every
check of workers/check_keras.py that applies to torch, on 1 and 3 ranks, and
model.fit on 4 ranks of batch B against one process of batch 4B.

Runs where the interpreter has both torch and Keras 3 (the torch 2.x venv);
elsewhere (Debian's python3 with torch 1.13 and no Keras) it is skipped and
says why.
"""

import os
import re

import pytest

os.environ["KERAS_BACKEND"] = "torch"  # before keras is imported in this process
pytest.importorskip("torch", reason="Keras's torch backend needs torch")
keras = pytest.importorskip("keras", reason="no Keras in this interpreter (the torch 2.x "
                                            "venv has keras==3.15.1)")
if keras.backend.backend() != "torch":
    pytest.skip("keras was imported with the %s backend before this module"
                % keras.backend.backend(), allow_module_level=True)

from conftest import assert_passed  # noqa: E402
from workers import check_keras  # noqa: E402

ENV = {"KERAS_BACKEND": "torch"}
JOBS = {}


def job(ranks, np, only=None):
    key = (np, only)
    if key not in JOBS:
        args = ["--only", only] if only else []
        JOBS[key] = ranks.run(np, "check_keras.py", *args, timeout=600, env=ENV)
    return JOBS[key]


CASES = [(np, fn.__name__) for np in (1, 3) for fn in check_keras.CHECKS
         if "torch" in fn.backends and np >= fn.min_size]


@pytest.mark.parametrize("np,name", CASES)
def test_check_passes_on_every_rank(ranks, np, name):
    assert_passed(job(ranks, np), np, name)


def test_four_ranks_of_b_equal_one_process_of_4b(ranks):
    name = "fit_equals_one_process_of_size_times_batch"
    result = job(ranks, 4, only=name)
    assert_passed(result, 4, name)
    assert len(re.findall(r"^equivalence torch run_eagerly=(True|False): 4 x 4 vs 1 x 16",
                          result.stdout, re.M)) == 2, result.stdout[-3000:]

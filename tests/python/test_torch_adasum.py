"""hvd.Adasum through horovod.torch on CPU, as ranks under tandem-run.

Horovod's own test/parallel/test_adasum_pytorch.py, read from the Horovod
checkout at test time, runs unchanged at 2 and 4 ranks: its two stability
tests as they are, its orthogonal and parallel tests (written for a GPU) on
CPU tensors (workers/horovod_adasum.py says how and why). Then Tandem's own
checks (workers/check_adasum_torch.py). The refusal of a world that is not a
power of two is checked at 3 ranks by workers/check_api.py.
"""

import re
import sys

import pytest

from conftest import WORKERS, assert_passed

sys.path.insert(0, str(WORKERS))
import check_adasum_torch
import horovod_checkout

HOROVOD_TESTS = ["test_orthogonal", "test_parallel", "test_stability", "test_stability_2"]


@pytest.mark.parametrize("np", [2, 4])
def test_horovods_adasum_tests_pass_on_cpu(ranks, tmp_path, np):
    path = tmp_path / "test_adasum_pytorch.py"
    path.write_text(horovod_checkout.show("test/parallel/test_adasum_pytorch.py"))
    r = ranks.run(np, "horovod_adasum.py", "torch", path, "--cpu-device", timeout=300)
    output = r.stdout + r.stderr
    assert r.returncode == 0, output[-4000:]
    summaries = re.findall(r"^(?:\[\d+\] )?adasum: ran (\d+) passed (\d+) skipped (\d+) "
                           r"failed (\d+)$", r.stdout, re.M)
    want = (str(len(HOROVOD_TESTS)), str(len(HOROVOD_TESTS)), "0", "0")
    assert summaries == [want] * np, output[-4000:]
    passed = re.findall(r"^(?:\[\d+\] )?adasum pass (\S+)$", r.stdout, re.M)
    assert sorted(passed) == sorted(HOROVOD_TESTS * np), output[-4000:]


CHECKS = {}


def checks_job(ranks, np):
    if np not in CHECKS:
        CHECKS[np] = ranks.run(np, "check_adasum_torch.py", timeout=300)
    return CHECKS[np]


# At 4 ranks only (two levels of the tree); Horovod's tests above cover 2.
@pytest.mark.parametrize("np", [4])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_adasum_torch.CHECKS])
def test_adasum_check_passes_on_every_rank(ranks, np, name):
    assert_passed(checks_job(ranks, np), np, name)

"""hvd.Adasum through horovod.tensorflow on CPU, as ranks under tandem-run:
Horovod's own test/parallel/test_adasum_tensorflow.py, read from the Horovod
checkout at test time, unchanged, at 2 and 4 ranks (workers/horovod_adasum.py
says what it sees differently and why). Its CPU test runs; its NCCL test
skips with Horovod's own reason, as it does on any node without a GPU."""

import re
import sys

import pytest

from conftest import WORKERS

sys.path.insert(0, str(WORKERS))
import horovod_checkout


@pytest.mark.parametrize("np", [2, 4])
def test_horovods_adasum_tests_pass_on_cpu(ranks, tmp_path, np):
    path = tmp_path / "test_adasum_tensorflow.py"
    path.write_text(horovod_checkout.show("test/parallel/test_adasum_tensorflow.py"))
    r = ranks.run(np, "horovod_adasum.py", "tensorflow", path, timeout=300)
    output = r.stdout + r.stderr
    assert r.returncode == 0, output[-4000:]
    summaries = re.findall(r"^(?:\[\d+\] )?adasum: ran (\d+) passed (\d+) skipped (\d+) "
                           r"failed (\d+)$", r.stdout, re.M)
    assert summaries == [("2", "1", "1", "0")] * np, output[-4000:]
    passed = re.findall(r"^(?:\[\d+\] )?adasum pass (\S+)$", r.stdout, re.M)
    assert passed == ["test_horovod_adasum_multiple_allreduce_cpu"] * np, output[-4000:]
    skips = re.findall(r"^(?:\[\d+\] )?adasum skip (\S+): (.*)$", r.stdout, re.M)
    assert set(skips) == {("test_horovod_adasum_multiple_allreduce_gpu_nccl",
                           "MPI, GPU or NCCL not available")}, skips

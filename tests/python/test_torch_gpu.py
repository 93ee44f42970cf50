"""CUDA tensors through tandem.torch with real ranks (tandem-run).

* Where the engine's GPU path is not usable (this machine: no driver), every
  collective on a CUDA tensor fails on every rank with the engine's
  UnsupportedError and its reason, and the next CPU call works
  (workers/check_gpu.py refusal). Reported as skipped where every rank has a
  usable GPU path.
* Where torch has CUDA and tandem_gpu_available() says 1, the real thing:
  allreduce/broadcast/allgather/alltoall/reducescatter on CUDA tensors across
  ranks, DistributedOptimizer and SyncBatchNorm on a CUDA model
  (workers/check_gpu.py cuda). Reported as SKIPPED, with the reason, anywhere
  else: never as passed.
"""

import json
import re
import subprocess
import sys

import pytest

from workers import check_gpu

JOBS = {}


def job(ranks, np, mode):
    if (np, mode) not in JOBS:
        JOBS[(np, mode)] = ranks.run(np, "check_gpu.py", mode)
    return JOBS[(np, mode)]


def assert_passed_everywhere(result, np, name):
    out = result.stdout + result.stderr
    failures = re.findall(r"^.*FAIL %s rank \d+: .*$" % name, result.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    skips = re.findall(r"^(?:\[\d+\] )?SKIP %s rank \d+: (.*)$" % name, result.stdout, re.M)
    if skips:
        pytest.skip(skips[0])
    passed = set(int(r) for r in re.findall(r"^(?:\[\d+\] )?PASS %s rank (\d+)$" % name,
                                            result.stdout, re.M))
    assert passed == set(range(np)), "check %s passed on ranks %s of %d; job exit %d:\n%s" % (
        name, sorted(passed), np, result.returncode, out[-4000:])


@pytest.mark.parametrize("np", [1, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_gpu.CHECKS["refusal"]])
def test_engine_refuses_cuda_tensors_where_it_has_no_gpu_path(ranks, np, name):
    assert_passed_everywhere(job(ranks, np, "refusal"), np, name)


@pytest.fixture(scope="session")
def gpus(py_env):
    """The number of GPUs to run on, or a skip saying why there are none."""
    probe = subprocess.run([sys.executable, "-c", """
import json, torch
from tandem import _collectives
try:
    usable, reason = _collectives.gpu_available()
except Exception as exc:
    usable, reason = False, str(exc)
print(json.dumps([torch.cuda.is_available(),
                  torch.cuda.device_count() if torch.cuda.is_available() else 0,
                  usable, reason]))
"""], capture_output=True, text=True, env=py_env, timeout=120)
    assert probe.returncode == 0, probe.stderr
    has_torch_cuda, count, usable, reason = json.loads(probe.stdout)
    if not has_torch_cuda:
        pytest.skip("needs a GPU: torch.cuda.is_available() is False here")
    if not usable:
        pytest.skip("needs a GPU: the engine's GPU path is not available: %s" % reason)
    return count


@pytest.mark.parametrize("name", [fn.__name__ for fn in check_gpu.CHECKS["cuda"]])
def test_cuda_tensors_across_ranks(ranks, gpus, name):
    # One rank per GPU (NCCL refuses two ranks on one device), at most 4.
    np = max(1, min(gpus, 4))
    assert_passed_everywhere(job(ranks, np, "cuda"), np, name)


def _built(env, code="import horovod.torch as hvd; print(hvd.nccl_built(), hvd.cuda_built())"):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_built_means_compiled_in_from_the_build_facts_or_the_engine(py_env, build_dir):
    from tandem import _built as built, _config  # the build tree's (conftest's sys.path)
    compiled = str(bool(_config.BUILD["cuda_headers"]))
    # The build tree's package describes the library it loads: exact, and
    # nccl_built() is Horovod's NCCL version code of the headers (or 0).
    code = built.nccl_version_code(_config.BUILD["nccl_headers"]) \
        if _config.BUILD["cuda_headers"] else 0
    assert _built(py_env) == [str(code), compiled]
    # The source package (no _config) with the same library through
    # TANDEM_LIBRARY: the answer comes from the engine and must agree.
    source = build_dir.parent / "python" if (build_dir.parent / "python" / "tandem").is_dir() \
        else None
    if source is None:
        pytest.skip("the source tree is not beside the build dir %s" % build_dir)
    env = dict(py_env, PYTHONPATH=str(source),
               TANDEM_LIBRARY=str(build_dir / "engine" / "libtandem.so"))
    facts, nccl, cuda, usable = _built(
        env, "from tandem import _basics; import horovod.torch as hvd; "
             "print(_basics.loaded_build_info(), hvd.nccl_built(), hvd.cuda_built(), "
             "hvd.gpu_status()[0])")
    assert (facts, cuda) == ("None", compiled)
    # Without facts the version is the NCCL the engine loaded, or, where the
    # GPU path is not usable, the oldest NCCL it accepts.
    if compiled == "False":
        assert nccl == "0"
    elif usable == "False":
        assert int(nccl) == built.nccl_version_code(built.OLDEST_NCCL)
    else:
        assert int(nccl) >= built.nccl_version_code(built.OLDEST_NCCL)

"""Horovod 0.28's contract for torch code (docs/python.md), on 1, 2 and 3 ranks
started by tandem-run: workers/check_horovod.py runs every check in one job
per world size, and each test below asserts that one check passed on every
rank. The failure scenarios (a lost peer, a peer that shuts down) end their
job, so each has a job of its own.

The worker's expectations are Horovod's own behaviour: it also runs, and
passes, under Horovod 0.28.1 (see its docstring).
"""

import re

import pytest

from workers import check_horovod

JOBS = {}


def job(ranks, np, *args):
    key = (np,) + args
    if key not in JOBS:
        JOBS[key] = ranks.run(np, "check_horovod.py", *args)
    return JOBS[key]


def passed_ranks(result, name):
    return set(int(r) for r in re.findall(r"^(?:\[\d+\] )?PASS %s rank (\d+)\b" % name,
                                         result.stdout, re.M))


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("name", [fn.__name__ for fn in check_horovod.CHECKS])
def test_check_passes_on_every_rank(ranks, np, name):
    result = job(ranks, np)
    output = result.stdout + result.stderr
    failures = re.findall(r"^.*FAIL %s rank \d+: .*$" % name, result.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + output[-3000:]
    assert passed_ranks(result, name) == set(range(np)), \
        "check %s passed on ranks %s of %d; job exit %d:\n%s" % (
            name, sorted(passed_ranks(result, name)), np, result.returncode, output[-4000:])


@pytest.mark.parametrize("np", [2, 3])
@pytest.mark.parametrize("scenario", sorted(check_horovod.SCENARIOS))
def test_engine_failures_are_horovod_internal_errors(ranks, np, scenario):
    # A lost peer (the last rank exits without shutdown) or a peer that shuts
    # down: every other rank's pending allreduce raises HorovodInternalError,
    # which the elastic idiom `except HorovodInternalError` catches.
    result = job(ranks, np, "--scenario", scenario)
    output = result.stdout + result.stderr
    assert not re.findall(r"^.*FAIL .*$", result.stdout, re.M), output[-3000:]
    assert passed_ranks(result, scenario) == set(range(np)), output[-3000:]
    for rank in range(np - 1):
        assert re.search(r"^(?:\[\d+\] )?PASS %s rank %d: \w+Error" % (scenario, rank),
                         result.stdout, re.M), output[-3000:]


def test_nccl_version_code_is_horovods_encoding():
    # nccl.h: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 (no library needed).
    from tandem import _built
    assert _built.nccl_version_code("2.7.8") == 2708
    assert _built.nccl_version_code("2.8.4") == 2804
    assert _built.nccl_version_code("2.9.6") == 20906
    assert _built.nccl_version_code("2.28.9") == 22809
    assert _built.nccl_version_code("2.30.7") == 23007
    # The fallback for a GPU build whose exact NCCL is unknown is the oldest
    # NCCL the engine accepts.
    from conftest import ROOT
    oldest = re.search(r"kMinNcclVersion = (\d+);",
                       (ROOT / "engine" / "gpu" / "nccl_api.h").read_text()).group(1)
    assert _built.nccl_version_code(_built.OLDEST_NCCL) == int(oldest)

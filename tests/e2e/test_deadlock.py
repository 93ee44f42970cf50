"""Diverged ranks under real srun --horovod=on across nodes: rank 0 waits in
a barrier, rank 1 in an allgather 'x', rank 2 in an allreduce whose name
drifted. Every rank fails (TANDEM_ERR_ABORTED) with the same message naming
each rank's wait, well before TANDEM_TIMEOUT (300 s here, beyond the test's
own limit), then shuts down, initializes again and runs an allreduce. Through
the C API (tests/unit/runtime/runtime_job.cc, scenario diverged) and through
horovod.torch (tests/python/workers/deadlock.py, which also checks that a
rank sleeping 4 s is not taken for a deadlock)."""

import re

import pytest

LAYOUTS = [("-N", "2", "-n", "2"), ("-N", "2", "-n", "3")]
IDS = ["2ranks-2nodes", "3ranks-2nodes"]


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_c_api_diverged_ranks_fail_on_every_rank(cluster, layout):
    job = cluster.build / "tests" / "unit" / "runtime" / "runtime_job"
    r = cluster.srun(*layout, "--horovod=on", str(job), "diverged",
                     env={"TANDEM_TIMEOUT": "300"}, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    size = int(layout[3])
    ok = sorted(int(x) for x in re.findall(r"^rank (\d+): ok diverged$", r.stdout, re.M))
    assert ok == list(range(size)), r.stdout + r.stderr
    messages = set(re.findall(r"^rank \d+: deadlock error: (.*)$", r.stdout, re.M))
    assert len(messages) == 1, messages
    message = messages.pop()
    assert "rank 0 waits in barrier" in message and "rank 1 waits in allgather 'x'" in message


@pytest.mark.parametrize("layout", LAYOUTS, ids=IDS)
def test_horovod_torch_diverged_ranks_and_a_slow_rank(cluster, layout):
    worker = cluster.root / "tests" / "python" / "workers" / "deadlock.py"
    r = cluster.srun(*layout, "--horovod=on", "/usr/bin/python3", str(worker),
                     env={"TANDEM_TIMEOUT": "300", "TANDEM_DEADLOCK_CHECK_SECONDS": "0.5"},
                     timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    size = int(layout[3])
    for check in ("diverged", "init_again", "slow_rank"):
        passed = sorted(int(x) for x in re.findall(
            r"^deadlock PASS %s rank (\d+)$" % check, r.stdout, re.M))
        assert passed == list(range(size)), (check, r.stdout + r.stderr)

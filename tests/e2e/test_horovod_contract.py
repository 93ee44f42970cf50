"""Horovod 0.28's contract for torch code (docs/python.md) under `srun --horovod=on`
on the local cluster: 3 ranks on 2 nodes (an uneven layout, 2 + 1), on
Debian's torch 1.13 and on the torch 2.x venv when it exists. The checks are
tests/python/workers/check_horovod.py (exception types, integer scaling,
sparse gradients, frozen parameters, every gradient convention, join
sequences, what scripts read off a DistributedOptimizer); a lost peer on the
other node must raise HorovodInternalError on the survivors."""

import os
import pathlib
import re

import pytest

WORKER = pathlib.Path(__file__).resolve().parents[1] / "python" / "workers" / "check_horovod.py"
# The worker's checks, read from its source (this process need not import torch).
CHECKS = re.findall(r"^@check\ndef (\w+)\(", WORKER.read_text(), re.M)
PYTHONS = [p for p in ("/usr/bin/python3", "/opt/tandem-deps/torch2/bin/python")
           if os.access(p, os.X_OK)]


def _srun(cluster, python, *args, tasks=3, timeout=900):
    return cluster.srun("-N2", f"-n{tasks}", "--horovod=on", python, str(WORKER),
                        *[str(a) for a in args], timeout=timeout)


@pytest.mark.parametrize("python", PYTHONS)
def test_contract_checks_on_two_nodes_three_ranks(cluster, python):
    r = _srun(cluster, python)
    out = r.stdout + r.stderr
    failures = re.findall(r"^.*FAIL .*$", r.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    passes = re.findall(r"^PASS (\w+) rank (\d+)$", r.stdout, re.M)
    assert len(CHECKS) >= 13, CHECKS
    for name in CHECKS:
        assert {int(k) for n, k in passes if n == name} == {0, 1, 2}, name + "\n" + out[-3000:]
    assert r.returncode == 0, out[-3000:]


def test_lost_peer_on_the_other_node_is_a_horovod_internal_error(cluster):
    # Rank 2 (alone on the second node) exits without shutting down while
    # ranks 0 and 1 wait in an allreduce: both raise HorovodInternalError.
    r = _srun(cluster, PYTHONS[0], "--scenario", "lost_peer", timeout=300)
    out = r.stdout + r.stderr
    assert not re.findall(r"^.*FAIL .*$", r.stdout, re.M), out[-3000:]
    for rank in (0, 1):
        assert re.search(r"^PASS lost_peer rank %d: \w+Error" % rank, r.stdout, re.M), out[-3000:]
    assert re.search(r"^PASS lost_peer rank 2 \(the lost rank\)", r.stdout, re.M), out[-3000:]

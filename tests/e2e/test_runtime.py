"""The runtime (named tensors, negotiation, fusion) under real srun
--horovod=on with ranks on several nodes: tests/unit/runtime/runtime_job.cc
uses only the public C API, as a framework binding does. tandem_init starts
the runtime over PMIx, shared memory inside nodes and TCP between them."""

import re

import pytest

SCENARIOS = ["random-orders", "mismatch", "join", "process-sets", "broadcast-allgather"]


def run_job(cluster, *srun_args, scenarios=(), env=None):
    job = cluster.build / "tests" / "unit" / "runtime" / "runtime_job"
    r = cluster.srun(*srun_args, "--horovod=on", str(job), *scenarios, env=env, timeout=180)
    return r


def lines_by_rank(stdout):
    ranks = {}
    for line in stdout.splitlines():
        m = re.match(r"rank (\d+): (.*)", line)
        if m:
            ranks.setdefault(int(m.group(1)), []).append(m.group(2))
    return ranks


@pytest.mark.parametrize("layout", [
    ("-N", "3", "-n", "6", "--ntasks-per-node=2", "-m", "block"),
    ("-N", "3", "-n", "6", "--ntasks-per-node=2", "-m", "cyclic"),
    ("-N", "2", "-n", "3"),  # uneven: 2 + 1
])
def test_every_scenario_on_every_rank_across_nodes(cluster, layout):
    r = run_job(cluster, *layout)
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = lines_by_rank(r.stdout)
    size = int(layout[3])
    assert sorted(ranks) == list(range(size)), r.stdout
    for rank, lines in ranks.items():
        for s in SCENARIOS:
            assert any(l.startswith("ok " + s) for l in lines), (rank, s, lines)
        # The same mismatch message, naming tensor, field and both shapes, on every rank.
        mismatch = [l for l in lines if l.startswith("mismatch error:")]
        assert len(mismatch) == 1, lines
        assert "'bad.shape'" in mismatch[0] and "[2,4]" in mismatch[0] and "[4,2]" in mismatch[0]
        # Join returns the last rank to join: the one with the most steps.
        assert "ok join (last %d)" % (size - 1) in lines, lines
        assert lines[-1] == "done"
    assert len({tuple(l for l in ls if l.startswith("mismatch")) for ls in ranks.values()}) == 1


def test_lost_peer_fails_pending_handles_on_other_nodes(cluster):
    # The last rank (on the last node) leaves with status 0 and no finalize;
    # the others' pending allreduce fails with PEER_LOST naming it (TCP
    # between nodes, shared memory inside them).
    r = run_job(cluster, "-N", "3", "-n", "3", scenarios=["lost-peer"],
                env={"TANDEM_TIMEOUT": "30"})
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = lines_by_rank(r.stdout)
    for rank in (0, 1):
        ok = [l for l in ranks.get(rank, []) if l.startswith("ok lost-peer")]
        assert ok, r.stdout + r.stderr
        assert "TANDEM_ERR_PEER_LOST" in ok[0] or "TANDEM_ERR_TIMEOUT" in ok[0], ok[0]

"""End to end: tandem-bench under real srun --horovod=on on the local
three-node cluster: shared memory inside each node, TCP between nodes, every
collective's result checked on every rank."""
import pytest


def bench(cluster, *srun_args):
    exe = cluster.build / "tools" / "tandem-bench"
    r = cluster.srun(*srun_args, "--horovod=on", str(exe), "-c", "all", "-b", "8", "-e", "4M", "-f", "32",
                     timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Out of bounds values : 0 OK" in r.stdout, r.stdout
    return r.stdout


@pytest.mark.parametrize("distribution", ["block", "cyclic"])
def test_bench_three_nodes_two_per_node(cluster, distribution):
    out = bench(cluster, "-N", "3", "-n", "6", "--ntasks-per-node=2", "-m", distribution)
    assert "6 ranks on 3 node(s), 2 local" in out
    # Every collective ran and was checked.
    for coll in ("allreduce", "broadcast", "allgather", "alltoall", "reducescatter"):
        assert f"# tandem-bench {coll}:" in out
    assert "FAIL" not in out


def test_bench_uneven_nodes(cluster):
    # Block distribution packs 4 tasks on the first node and one on each other:
    # the hierarchical allreduce's uneven path.
    out = bench(cluster, "-N", "3", "-n", "6")
    assert "6 ranks on 3 node(s)" in out
    assert "FAIL" not in out

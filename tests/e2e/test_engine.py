"""End to end: tandem-bench under real srun --horovod=on on the local
three-node cluster: shared memory inside each node, TCP between nodes, every
collective's result checked on every rank; the allreduce in place as well
(tandem-bench -i: send == recv, as Horovod reduces its fusion buffer)."""
import pytest


def bench(cluster, *srun_args, in_place=False):
    exe = cluster.build / "tools" / "tandem-bench"
    what = ["-c", "allreduce", "-i"] if in_place else ["-c", "all"]
    r = cluster.srun(*srun_args, "--horovod=on", str(exe), *what, "-b", "8", "-e", "4M", "-f", "32",
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


@pytest.mark.parametrize("in_place", [False, True], ids=["out_of_place", "in_place"])
def test_bench_uneven_nodes(cluster, in_place):
    # Block distribution packs 4 tasks on the first node and one on each other:
    # the hierarchical allreduce's uneven path.
    out = bench(cluster, "-N", "3", "-n", "6", in_place=in_place)
    assert "6 ranks on 3 node(s)" in out
    assert "FAIL" not in out
    if in_place:
        assert "private buffers, in place" in out


def test_bench_in_place_two_per_node(cluster):
    out = bench(cluster, "-N", "3", "-n", "6", "--ntasks-per-node=2", in_place=True)
    assert "6 ranks on 3 node(s), 2 local; private buffers, in place" in out
    assert "FAIL" not in out


@pytest.mark.parametrize("layout", [
    # What horovodrun -H node2:1,node1:2 runs: rank 0 on the second node, so
    # the launcher's node ids (PMIX_NODEID) are not in rank order.
    ["-n", "3", "-m", "arbitrary", "-w", "node2,node1,node1"],
    # Each node's second rank out of node order.
    ["-n", "4", "-m", "arbitrary", "-w", "node1,node2,node2,node1"],
    ["-n", "4", "-m", "cyclic"],
], ids=["rank0_on_node2", "interleaved", "cyclic"])
def test_bench_ranks_out_of_node_order(cluster, layout):
    out = bench(cluster, "-N", "2", *layout)
    assert f"{layout[1]} ranks on 2 node(s)" in out
    assert "FAIL" not in out

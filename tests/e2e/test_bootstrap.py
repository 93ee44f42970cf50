"""The PMIx bootstrap under real srun: every rank of a multi-node step joins
through PMIx (which the plugin turns on), learns the same layout, and
exchanges blobs with every other rank."""


import pytest


def probe_lines(cluster, *srun_args):
    probe = cluster.build / "tests" / "unit" / "bootstrap" / "bootstrap_probe"
    r = cluster.srun(*srun_args, "--horovod=on", str(probe))
    assert r.returncode == 0, r.stdout + r.stderr
    ranks = {}
    for line in r.stdout.splitlines():
        if not line.startswith("rank="):
            continue
        fields = dict(kv.split("=", 1) for kv in line.split())
        ranks[int(fields["rank"])] = fields
    return ranks


@pytest.mark.parametrize("distribution,nodes", [
    ("block", [0, 0, 1, 1, 2, 2]),
    ("cyclic", [0, 1, 2, 0, 1, 2]),
])
def test_pmix_bootstrap_over_three_nodes(cluster, distribution, nodes):
    ranks = probe_lines(cluster, "-N", "3", "-n", "6", "--ntasks-per-node=2", "-m", distribution)
    assert sorted(ranks) == list(range(6))
    expected_nodes = ",".join(map(str, nodes))
    for r, f in ranks.items():
        assert f["size"] == "6"
        assert f["cross_size"] == "3"
        assert f["nodes"] == expected_nodes, f
        assert int(f["cross_rank"]) == nodes[r]
        assert int(f["local_size"]) == 2
        assert int(f["local_rank"]) == nodes[:r].count(nodes[r])
        assert f["gather"] == "r0,r1,r2,r3,r4,r5"
        assert f["bcast"] == "from-5"
        assert f["job"].startswith("pmix-")
    # One job id for the whole step.
    assert len({f["job"] for f in ranks.values()}) == 1


def test_pmix_bootstrap_uneven_layout(cluster):
    # 8 CPUs per node: block packs 4 tasks on node1, then one on each other node.
    ranks = probe_lines(cluster, "-N", "3", "-n", "6")
    layout = [0, 0, 0, 0, 1, 2]
    assert sorted(ranks) == list(range(6))
    for r, f in ranks.items():
        assert f["nodes"] == ",".join(map(str, layout))
        assert int(f["cross_rank"]) == layout[r]
        assert int(f["local_size"]) == layout.count(layout[r])
        assert int(f["local_rank"]) == layout[:r].count(layout[r])
        assert f["gather"] == "r0,r1,r2,r3,r4,r5"

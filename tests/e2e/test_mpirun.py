"""Open MPI's mpirun inside an allocation, without the SPANK plugin: the
line Horovod's guides teach (``mpirun -np 4 -H node1:2,node2:2 python
train.py``) from an sbatch script. Open MPI starts its daemons with srun and
serves PMIx; the engine joins through it, takes local rank and node from it,
and chooses the network interface itself (docs/tcp.md): on these nodes the
default route's, and with the route removed the only interface besides
loopback, or with a second interface on each node the one on the peers'
subnet."""

import pathlib
import shutil
import subprocess
import sys

import pytest

WORKERS = pathlib.Path(__file__).resolve().parents[1] / "python" / "workers"
WORKER = WORKERS / "identity_allreduce.py"
sys.path.insert(0, str(WORKERS))
import launcher_output  # noqa: E402
EXPECTED = [(0, 0, 0, "node1"), (1, 1, 0, "node1"), (2, 0, 1, "node2"), (3, 1, 1, "node2")]

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None,
                                reason="Open MPI's mpirun is not installed")


def mpirun_job(cluster, python, forward):
    """The guide's line in an sbatch script, after what `module load tandem`
    sets (PYTHONPATH, TANDEM_LIBRARY); `forward` is what the user adds."""
    script = (f"export PYTHONPATH={cluster.python_dir} TANDEM_LIBRARY={cluster.engine}\n"
              f"mpirun --allow-run-as-root -np 4 -H node1:2,node2:2 {forward} "
              f"{python} {WORKER}\n")
    batch = cluster.sbatch(script, ["-N", "2", "--ntasks-per-node=2", "-w", "node1,node2"],
                           env={"PYTHONPATH": None, "TANDEM_LIBRARY": None}, timeout=120)
    assert batch.state == "COMPLETED", f"{batch}"
    lines = launcher_output.rank_objects(batch.output)
    got = [(d["rank"], d["local_rank"], d["cross_rank"], d["host"]) for d in lines]
    assert got == EXPECTED, batch.output + batch.stderr
    assert {(d["size"], d["local_size"], d["sum"]) for d in lines} == {(4, 2, 10.0)}
    return batch


def ns(cluster, node):
    return f"tandem-{cluster.name}-node{node}"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def without_default_route(cluster):
    """The nodes lose their default route for one test (and get it back)."""
    gateway = (cluster.dir / "cluster.env").read_text().split("CTLD_ADDR=")[1].split()[0]
    for n in (1, 2):
        ip("-n", ns(cluster, n), "route", "del", "default")
    try:
        yield
    finally:
        for n in (1, 2):
            ip("-n", ns(cluster, n), "route", "add", "default", "via", gateway)


def test_inside_an_allocation_nothing_needs_forwarding(cluster, any_torch_python):
    # Open MPI starts its daemons with srun, which carries the environment.
    mpirun_job(cluster, any_torch_python, "")


def test_without_default_route_the_only_interface_is_taken(cluster, any_torch_python,
                                                           without_default_route):
    # The guide's line as written, -x PYTHONPATH included.
    batch = mpirun_job(cluster, any_torch_python, "-x PYTHONPATH -x TANDEM_LIBRARY "
                       "-x TANDEM_LOG=debug -x TANDEM_LOG_SUBSYS=tcp")
    assert "the only interface up besides loopback (eth0)" in batch.stderr


def test_a_second_interface_gives_way_to_the_peers_subnet(cluster, any_torch_python,
                                                          without_default_route):
    # A veth pair inside each node, one end in a subnet of the node's own:
    # two candidates, and only eth0 reaches the peers.
    for n in (1, 2):
        ip("-n", ns(cluster, n), "link", "add", "side0", "type", "veth", "peer", "name", "side1")
        ip("-n", ns(cluster, n), "addr", "add", f"198.51.10{n}.1/24", "dev", "side0")
        ip("-n", ns(cluster, n), "link", "set", "side1", "up")
        ip("-n", ns(cluster, n), "link", "set", "side0", "up")
    try:
        batch = mpirun_job(cluster, any_torch_python,
                           "-x TANDEM_LOG=debug -x TANDEM_LOG_SUBSYS=tcp")
        assert "the one interface on the other nodes' subnet (eth0)" in batch.stderr
    finally:
        for n in (1, 2):
            ip("-n", ns(cluster, n), "link", "del", "side0")

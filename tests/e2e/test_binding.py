"""Topology-aware binding under real srun: a cluster whose plugstack.conf
names the tiny4 fixture (2 CPUs, one per socket; 4 fake GPUs, two per socket;
one HCA per socket), so the planned affinity can really be applied here.

Expected plan (docs/binding.md): tasks 0,1 on GPUs 0,1, CPU 0, mlx5_0/ib0;
tasks 2,3 on GPUs 2,3, CPU 1, mlx5_1/ib1; one NCCL filter for the node.
"""

import json
import os

import pytest

import conftest

FIXTURE = conftest.ROOT / "tests" / "fixtures" / "topologies" / "tiny4.xml"

# What each task reports: its binding-related environment and its affinity.
PROBE = (
    "import json, os\n"
    "status = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
    "keys = ['SLURM_LOCALID', 'CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER', 'TANDEM_NIC',\n"
    "        'TANDEM_TCP_IFNAME', 'NCCL_IB_HCA', 'NCCL_SOCKET_IFNAME']\n"
    "out = {k: os.environ.get(k) for k in keys}\n"
    "out['cpus'] = status['Cpus_allowed_list'].strip()\n"
    "print(json.dumps(out))\n"
)


@pytest.fixture(scope="module")
def bind_cluster(build_dir):
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (network namespaces)")
    c = conftest.Cluster(f"bind{os.getpid()}", build_dir, [f"topology={FIXTURE}"])
    try:
        c.start()
        yield c
    finally:
        c.stop()


def probe(cluster, tmp_path, *args):
    out = tmp_path / "out"
    out.mkdir()
    r = cluster.srun("-N", "1", f"--output={out}/%t.json", f"--error={out}/%t.err", *args,
                     "/usr/bin/python3", "-c", PROBE)
    errors = {p.name: p.read_text() for p in out.glob("*.err")}
    assert r.returncode == 0, f"srun {args} failed ({r.returncode}): {r.stderr} {errors}"
    tasks = [json.loads(p.read_text()) for p in out.glob("*.json")]
    return sorted(tasks, key=lambda t: int(t["SLURM_LOCALID"])), errors


def test_four_tasks_four_gpus(bind_cluster, tmp_path):
    tasks, _ = probe(bind_cluster, tmp_path, "-n", "4", "--gres=gpu:4", "--horovod=on")
    assert [t["CUDA_VISIBLE_DEVICES"] for t in tasks] == ["0,1,2,3"] * 4
    assert [t["cpus"] for t in tasks] == ["0", "0", "1", "1"]
    assert [t["TANDEM_NIC"] for t in tasks] == ["mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"]
    assert [t["TANDEM_TCP_IFNAME"] for t in tasks] == ["ib0", "ib0", "ib1", "ib1"]
    assert {t["NCCL_IB_HCA"] for t in tasks} == {"=mlx5_0,mlx5_1"}
    assert {t["CUDA_DEVICE_ORDER"] for t in tasks} == {"PCI_BUS_ID"}


def test_two_tasks_get_a_socket_each_and_own_gpus_first(bind_cluster, tmp_path):
    tasks, _ = probe(bind_cluster, tmp_path, "-n", "2", "--gres=gpu:4", "--horovod=on")
    assert [t["CUDA_VISIBLE_DEVICES"] for t in tasks] == ["0,1,2,3", "0,2,3,1"]
    assert [t["cpus"] for t in tasks] == ["0", "1"]
    assert [t["TANDEM_NIC"] for t in tasks] == ["mlx5_0", "mlx5_1"]


def test_gpus_per_task_keeps_slurms_gpu_and_binds_cpus_near_it(bind_cluster, tmp_path):
    tasks, _ = probe(bind_cluster, tmp_path, "-n", "4", "--gpus-per-task=1", "--horovod=on")
    assert [t["CUDA_VISIBLE_DEVICES"] for t in tasks] == ["0", "1", "2", "3"]
    assert [t["cpus"] for t in tasks] == ["0", "0", "1", "1"]
    assert [t["TANDEM_NIC"] for t in tasks] == ["mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1"]


def test_verbose_line_names_each_bindings_source(bind_cluster, tmp_path):
    _, errors = probe(bind_cluster, tmp_path, "-n", "4", "--gres=gpu:4", "--horovod=verbose")
    text = "".join(errors.values())
    assert "gpu=0(0000:02:00.0)[planner] cpus=0[planner] numa=0 nic=mlx5_0[planner]" in text, text
    assert "gpu=3(0000:43:00.0)[planner] cpus=1[planner] numa=1 nic=mlx5_1[planner]" in text, text


def test_user_cpu_map_is_kept(bind_cluster, tmp_path):
    tasks, _ = probe(bind_cluster, tmp_path, "-n", "2", "--gres=gpu:4", "--cpu-bind=map_cpu:1,0",
                     "--horovod=on")
    # task/none ignores --cpu-bind, so each task keeps the affinity Slurm left: all CPUs.
    assert [t["cpus"] for t in tasks] == ["0-1", "0-1"]
    assert [t["TANDEM_NIC"] for t in tasks] == ["mlx5_0", "mlx5_1"]


def test_without_the_option_nothing_is_bound(bind_cluster, tmp_path):
    tasks, _ = probe(bind_cluster, tmp_path, "-n", "2", "--gres=gpu:4")
    assert [t["CUDA_VISIBLE_DEVICES"] for t in tasks] == ["0,1,2,3"] * 2
    assert [t["cpus"] for t in tasks] == ["0-1", "0-1"]
    assert [t["TANDEM_NIC"] for t in tasks] == [None, None]

"""The SPANK plugin under real srun/sbatch on the local 3-node cluster."""

import re

LIBM = "/lib/x86_64-linux-gnu/libm.so.6"  # any real library: ld.so warns about missing ones


def identity(e):
    """The Horovod identity of one task as a tuple of ints plus host."""
    keys = ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE")
    return tuple(int(e["HOROVOD_" + k]) for k in keys) + (e["HOROVOD_HOSTNAME"],)


def test_six_tasks_two_per_node_block(cluster):
    envs = cluster.task_envs("-N", "3", "-n", "6", "--ntasks-per-node=2", "--horovod=on")
    assert [identity(e) for e in envs] == [
        # rank size local lsize cross csize host
        (0, 6, 0, 2, 0, 3, "node1"),
        (1, 6, 1, 2, 0, 3, "node1"),
        (2, 6, 0, 2, 1, 3, "node2"),
        (3, 6, 1, 2, 1, 3, "node2"),
        (4, 6, 0, 2, 2, 3, "node3"),
        (5, 6, 1, 2, 2, 3, "node3"),
    ]
    for e in envs:
        # PMIx although slurm.conf says MpiDefault=none and no --mpi was given
        assert e["PMIX_RANK"] == e["HOROVOD_RANK"]
        assert e["TANDEM_NODE_ID"] == str(int(e["HOROVOD_RANK"]) // 2)
        assert e["TANDEM_NNODES"] == "3"
        assert e["TANDEM_LIBRARY"] == cluster.engine
        assert e["TANDEM_TCP_IFNAME"] == "eth0"
        assert e["LD_PRELOAD"] == cluster.preload
        assert e["PYTHONPATH"] == cluster.python_dir


def test_six_tasks_uneven_block(cluster):
    # 8 CPUs per node: block packs 4 tasks on node1, then one on each other node.
    envs = cluster.task_envs("-N", "3", "-n", "6", "--horovod=on")
    assert envs[0]["SLURM_STEP_TASKS_PER_NODE"] == "4,1(x2)"
    # Horovod: cross_size counts the nodes that have a task with this local rank.
    assert [identity(e) for e in envs] == [
        (0, 6, 0, 4, 0, 3, "node1"),
        (1, 6, 1, 4, 0, 1, "node1"),
        (2, 6, 2, 4, 0, 1, "node1"),
        (3, 6, 3, 4, 0, 1, "node1"),
        (4, 6, 0, 1, 1, 3, "node2"),
        (5, 6, 0, 1, 2, 3, "node3"),
    ]
    assert [e["PMIX_RANK"] for e in envs] == [str(r) for r in range(6)]


def test_six_tasks_cyclic(cluster):
    envs = cluster.task_envs("-N", "3", "-n", "6", "--ntasks-per-node=2", "-m", "cyclic",
                             "--horovod=on")
    assert [identity(e) for e in envs] == [
        (0, 6, 0, 2, 0, 3, "node1"),
        (1, 6, 0, 2, 1, 3, "node2"),
        (2, 6, 0, 2, 2, 3, "node3"),
        (3, 6, 1, 2, 0, 3, "node1"),
        (4, 6, 1, 2, 1, 3, "node2"),
        (5, 6, 1, 2, 2, 3, "node3"),
    ]
    assert [e["PMIX_RANK"] for e in envs] == [str(r) for r in range(6)]


def test_four_tasks_arbitrary_rank0_on_node2(cluster):
    # A hostlist that starts on the allocation's second node (as horovodrun
    # -H node2:...,node1:... gives) and interleaves the nodes' ranks. Local
    # ranks follow rank order on each node; cross ranks are Slurm's node ids.
    envs = cluster.task_envs("-N", "2", "-n", "4", "-m", "arbitrary",
                             "-w", "node2,node1,node1,node2", "--horovod=on")
    assert [identity(e) for e in envs] == [
        (0, 4, 0, 2, 1, 2, "node2"),
        (1, 4, 0, 2, 0, 2, "node1"),
        (2, 4, 1, 2, 0, 2, "node1"),
        (3, 4, 1, 2, 1, 2, "node2"),
    ]
    assert [e["PMIX_RANK"] for e in envs] == [str(r) for r in range(4)]


def test_no_option_changes_nothing(cluster):
    user = {"LD_PRELOAD": LIBM, "PYTHONPATH": "/user/py"}
    envs = cluster.task_envs("-N", "2", "-n", "2", env=user)
    assert len(envs) == 2
    for e in envs:
        added = sorted(k for k in e if k.startswith(("HOROVOD_", "TANDEM_", "PMIX_")))
        assert added == []
        assert e["LD_PRELOAD"] == LIBM
        assert e["PYTHONPATH"] == "/user/py"
        assert e.get("SLURM_MPI_TYPE", "none") == "none"


def test_off_changes_nothing(cluster):
    envs = cluster.task_envs("-N", "1", "-n", "1", "--horovod=off", env={"LD_PRELOAD": None})
    assert "HOROVOD_RANK" not in envs[0] and "LD_PRELOAD" not in envs[0]
    assert "PMIX_RANK" not in envs[0]


def test_preload_and_pythonpath_keep_user_entries_without_duplicates(cluster):
    user = {"LD_PRELOAD": f"{LIBM} {cluster.preload}",
            "PYTHONPATH": f"/user/a:{cluster.python_dir}:/user/b"}
    envs = cluster.task_envs("-N", "1", "-n", "2", "--horovod=on", env=user)
    for e in envs:
        assert e["LD_PRELOAD"] == f"{cluster.preload}:{LIBM}"
        assert e["PYTHONPATH"] == f"{cluster.python_dir}:/user/a:/user/b"


def test_bad_value_fails_srun_with_one_clear_message(cluster):
    r = cluster.srun("-N", "1", "--horovod=maybe", "true")
    assert r.returncode != 0
    assert "tandem: invalid value 'maybe' for --horovod: expected one of on, off, verbose" in r.stderr


def test_bad_value_fails_sbatch(cluster):
    b = cluster.sbatch("true\n", args=["--horovod=yes"])
    assert b.state == "REJECTED"
    assert "tandem: invalid value 'yes' for --horovod: expected one of on, off, verbose" in b.stderr


def test_other_mpi_is_refused(cluster):
    r = cluster.srun("-N", "1", "--mpi=pmi2", "--horovod=on", "true")
    assert r.returncode != 0
    assert "needs the PMIx MPI plugin, but MPI type 'pmi2' was asked for" in r.stderr


def test_explicit_pmix_is_accepted(cluster):
    envs = cluster.task_envs("-N", "1", "-n", "2", "--mpi=pmix", "--horovod=on")
    assert [e["PMIX_RANK"] for e in envs] == ["0", "1"]
    assert [e["HOROVOD_RANK"] for e in envs] == ["0", "1"]


def test_verbose_prints_one_line_per_task(cluster):
    r = cluster.srun("-w", "node1,node2", "-n", "4", "--ntasks-per-node=2", "--gpus-per-node=2",
                     "--horovod=verbose", "true")
    assert r.returncode == 0, r.stderr
    lines = sorted(l for l in r.stderr.splitlines() if l.startswith("tandem: rank"))
    pattern = (r"tandem: rank (\d)/4 node (node\d) local_rank (\d)/2 cross_rank (\d)/2 "
               r"gpus 0,1 cpus \S+ nic eth0 binding: gpu=none\[none\] cpus=\S+\[planner\] numa=0 "
               r"nic=\S+ \(the topology shows no NVIDIA GPU: GPU binding skipped\)")
    parsed = [re.fullmatch(pattern, l) for l in lines]
    assert all(parsed), r.stderr
    assert [m.groups() for m in parsed] == [
        ("0", "node1", "0", "0"), ("1", "node1", "1", "0"),
        ("2", "node2", "0", "1"), ("3", "node2", "1", "1")], r.stderr


def test_sbatch_option_reaches_every_srun_and_off_overrides(cluster):
    script = """#!/bin/bash
#SBATCH --horovod=on
#SBATCH -N 2 -n 4 --ntasks-per-node=2
echo "batch HOROVOD_RANK=${HOROVOD_RANK:-unset} LD_PRELOAD=${LD_PRELOAD:-unset} PMIX_RANK=${PMIX_RANK:-unset} PYTHONPATH=${PYTHONPATH:-unset}"
srun --immediate=10 bash -c 'echo "on $HOROVOD_RANK $HOROVOD_CROSS_RANK $PMIX_RANK $LD_PRELOAD"'
srun --immediate=10 -N 1 -n 1 bash -c 'echo "again $HOROVOD_RANK/$HOROVOD_SIZE"'
srun --immediate=10 --horovod=off bash -c 'echo "off ${HOROVOD_RANK:-unset} ${PMIX_RANK:-unset} ${LD_PRELOAD:-unset}"'
"""
    b = cluster.sbatch(script, env={"LD_PRELOAD": None, "PYTHONPATH": None})
    assert (b.state, b.exit_code) == ("COMPLETED", "0:0"), b.output + b.stderr
    lines = b.output.splitlines()
    # the batch shell itself is not a user step: untouched
    assert "batch HOROVOD_RANK=unset LD_PRELOAD=unset PMIX_RANK=unset PYTHONPATH=unset" in lines
    on = sorted(l for l in lines if l.startswith("on "))
    assert on == [f"on {r} {r // 2} {r} {cluster.preload}" for r in range(4)]
    assert [l for l in lines if l.startswith("again ")] == ["again 0/1"]
    assert sorted(l for l in lines if l.startswith("off ")) == ["off unset unset unset"] * 4


def test_unknown_plugstack_key_stops_srun_and_sbatch(cluster):
    env = cluster.client_env([f"engine={cluster.engine}", "colour=blue"])
    r = cluster.srun("-N", "1", "true", env=env)
    assert r.returncode != 0
    assert "tandem: plugstack.conf: unknown key 'colour' in 'colour=blue'" in r.stderr
    b = cluster.sbatch("true\n", env=env)
    assert b.state == "REJECTED"
    assert "unknown key 'colour'" in b.stderr


def test_bad_plugstack_value_is_named(cluster):
    env = cluster.client_env(["default=sometimes"])
    r = cluster.srun("-N", "1", "true", env=env)
    assert r.returncode != 0
    assert "bad value for 'default'" in r.stderr and "found 'sometimes'" in r.stderr



def test_salloc_option_reaches_srun(cluster):
    r = cluster.run(["salloc", "-N", "1", "-n", "2", "--immediate=10", "--horovod=on",
                     "srun", "--immediate=10", "bash", "-c",
                     "echo R=$HOROVOD_RANK P=$PMIX_RANK"])
    assert r.returncode == 0, r.stderr
    assert sorted(l for l in r.stdout.splitlines() if l.startswith("R=")) == ["R=0 P=0", "R=1 P=1"]

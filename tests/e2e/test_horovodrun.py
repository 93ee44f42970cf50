"""horovodrun inside an allocation: one sbatch job on node1 and node2 runs
Horovod's line `horovodrun -np 4 -H node1:2,node2:2 python script` (ranks
0, 1 on node1, 2, 3 on node2, the sum of rank + 1 everywhere), an uneven
layout (-H node1:1,node2:2, through --distribution=arbitrary), the hosts
out of the allocation's order (-H node2:1,node1:2: rank 0 on node2), and,
refused before any rank starts, a host outside the allocation; a failing
rank ends the job at once, with srun's and horovodrun's error lines."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "python" / "workers" / "horovodrun_allreduce.py"
LINE = re.compile(r"^\[(\d+)\]<stdout>:rank (\d+) of (\d+) local (\d+)/(\d+) sum (\S+) on (\S+)$")


def ranks(text, marker):
    """{rank: (size, local rank, local size, sum, host)} of one run's lines."""
    part = text.split(marker, 1)[1].split("== ", 1)[0]
    found = {}
    for line in part.splitlines():
        m = LINE.match(line)
        if m:
            assert m.group(1) == m.group(2), line
            found[int(m.group(1))] = (int(m.group(3)), int(m.group(4)), int(m.group(5)),
                                      float(m.group(6)), m.group(7))
    return found


def test_horovodrun_places_the_step_as_h_says(cluster, any_torch_python):
    horovodrun = cluster.build / "tools" / "horovodrun"
    script = f"""
echo "== outside"
{horovodrun} -np 2 -H node3:2 true
echo "rc=$?"
echo "== even"
{horovodrun} -np 4 -H node1:2,node2:2 {any_torch_python} {SCRIPT} || echo "even failed: $?"
echo "== uneven"
{horovodrun} -np 3 -H node1:1,node2:2 {any_torch_python} {SCRIPT} || echo "uneven failed: $?"
echo "== reversed"
{horovodrun} -np 3 -H node2:1,node1:2 {any_torch_python} {SCRIPT} || echo "reversed failed: $?"
echo "== failing"
start=$SECONDS
{horovodrun} -np 2 -H node1:1,node2:1 /usr/bin/python3 -c "$FAIL"
echo "rc=$? took=$((SECONDS - start))"
echo "== end"
"""
    # rank 1 fails; rank 0 would sleep for a minute unless the job ends
    fail = ("import os, sys, time; rank = os.environ['HOROVOD_RANK']; "
            "sys.exit(3) if rank == '1' else time.sleep(60)")
    batch = cluster.sbatch(script, args=["-N2", "-w", "node1,node2", "--ntasks-per-node=2"],
                           env={"FAIL": fail}, timeout=240)
    out, err = batch.output, batch.stderr
    assert batch.state == "COMPLETED", (batch, out, err)
    outside = out.split("== outside", 1)[1].split("==", 1)[0]
    assert outside.split() == ["rc=2"], (out, err)
    assert ("horovodrun ERROR tools: -H: host node3 is not in allocation %d (its nodes: "
            "node1,node2)" % batch.job_id) in err, err
    assert "failed" not in out, (out + "\n-----\n" + err)
    assert ranks(out, "== even") == {
        0: (4, 0, 2, 10.0, "node1"), 1: (4, 1, 2, 10.0, "node1"),
        2: (4, 0, 2, 10.0, "node2"), 3: (4, 1, 2, 10.0, "node2")}, (out, err)
    assert ranks(out, "== uneven") == {
        0: (3, 0, 1, 6.0, "node1"), 1: (3, 0, 2, 6.0, "node2"),
        2: (3, 1, 2, 6.0, "node2")}, (out, err)
    assert ranks(out, "== reversed") == {
        0: (3, 0, 1, 6.0, "node2"), 1: (3, 0, 2, 6.0, "node1"),
        2: (3, 1, 2, 6.0, "node1")}, (out, err)
    assert "srun: Warning" not in err, err
    failing = out.split("== failing", 1)[1].split("==", 1)[0].split()
    rc, took = (int(w.split("=")[1]) for w in failing)
    # srun's status is its worst task's: the killed rank 0's 143, not 3
    assert rc != 0 and took < 30, (out, err)
    assert "node2: task 1: Exited with exit code 3" in err, err
    assert "horovodrun ERROR tools: the job failed: srun exited with status %d" % rc in err, err

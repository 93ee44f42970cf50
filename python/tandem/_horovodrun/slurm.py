"""Inside a Slurm allocation: the job as one ``srun --horovod=on`` step.

The step is placed as -np and -H say. Every host must be a node of the
allocation and may not claim more slots than the CPUs the allocation has
there; both are checked before anything starts. Any order of hosts is
kept: -H node2:1,node1:2 puts rank 0 on node2, as Horovod would. When every host gets the
same number of ranks and -H lists them in the allocation's order, the step
is ``-N k -n np --ntasks-per-node c --nodelist=...`` (block placement gives
Horovod's ranks); otherwise each rank's node is written, one a line, to a
file named by SLURM_HOSTFILE and the step is ``--distribution=arbitrary``.
Without -H the step is ``-n np`` on the allocation's nodes, as srun places
it. The plugin then gives every task its rank, binding and bootstrap as for
any ``srun --horovod=on``.
"""

import os
import re
import subprocess
import tempfile

from tandem._horovodrun import hosts as hostlist


class SlurmError(ValueError):
    pass


def in_allocation(environ=os.environ):
    return bool(environ.get("SLURM_JOB_ID"))


def allocation_nodes(environ=os.environ):
    """[node] of the allocation, in Slurm's order."""
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not nodelist:
        raise SlurmError("SLURM_JOB_ID=%s is set but SLURM_JOB_NODELIST is not: run horovodrun "
                         "in the allocation's shell or batch script" % environ["SLURM_JOB_ID"])
    try:
        r = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError("cannot expand SLURM_JOB_NODELIST=%s with scontrol: %s"
                         % (nodelist, exc)) from None
    if r.returncode != 0:
        raise SlurmError("scontrol show hostnames %s failed: %s" % (nodelist, r.stderr.strip()))
    return r.stdout.split()


def cpus_per_node(nodes, environ=os.environ):
    """{node: CPUs the allocation has there}, from SLURM_JOB_CPUS_PER_NODE
    ("4(x2),2"); {} when it is not set."""
    text = environ.get("SLURM_JOB_CPUS_PER_NODE", "")
    counts = []
    for item in filter(None, text.split(",")):
        m = re.match(r"^(\d+)(?:\(x(\d+)\))?$", item)
        if not m:
            return {}
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return dict(zip(nodes, counts)) if len(counts) == len(nodes) else {}


def _resolve(name, nodes, environ):
    """The allocation's node that -H's name means."""
    if name in nodes:
        return name
    short = name.split(".")[0]
    if short in nodes:
        return short
    if name in hostlist.local_names():
        here = environ.get("SLURMD_NODENAME")
        if here in nodes:
            return here
        raise SlurmError("-H %s names this host, which is not a node of allocation %s (its "
                         "nodes: %s); name the nodes, or leave -H out to use them all"
                         % (name, environ["SLURM_JOB_ID"], ",".join(nodes)))
    raise SlurmError("-H: host %s is not in allocation %s (its nodes: %s); name only its "
                     "nodes, or leave -H out to use them all"
                     % (name, environ["SLURM_JOB_ID"], ",".join(nodes)))


def placement(host_slots, np, environ=os.environ):
    """[(node, ranks)] for the step, every check done; None without -H."""
    nodes = allocation_nodes(environ)
    if host_slots is None:
        return None
    resolved = [(_resolve(h, nodes, environ), s) for h, s in host_slots]
    cpus = cpus_per_node(nodes, environ)
    for (node, slots), (given, _) in zip(resolved, host_slots):
        if node in cpus and slots > cpus[node]:
            raise SlurmError("-H %s:%d: node %s has %d CPUs in allocation %s, fewer than the %d "
                             "slots asked for; give at most %d slots there"
                             % (given, slots, node, cpus[node], environ["SLURM_JOB_ID"], slots,
                                cpus[node]))
    seen = set()
    for node, _ in resolved:
        if node in seen:
            raise SlurmError("-H names node %s twice; give each node once with all its slots"
                             % node)
        seen.add(node)
    return hostlist.assign(resolved, np)


def srun_command(np, placed, mode, command, environ=os.environ):
    """(argv, extra environment) for the step. `mode` is --horovod's value."""
    argv = ["srun", "--horovod=" + mode, "--label", "--export=ALL", "--ntasks=%d" % np]
    extra = {}
    if placed is not None:
        nodes = allocation_nodes(environ)
        counts = {n for _, n in placed}
        in_order = sorted(placed, key=lambda p: nodes.index(p[0])) == placed
        if len(counts) == 1 and in_order:
            argv += ["--nodes=%d" % len(placed), "--nodelist=" + ",".join(n for n, _ in placed),
                     "--ntasks-per-node=%d" % placed[0][1], "--distribution=block"]
        else:
            fd, path = tempfile.mkstemp(prefix="horovodrun-hosts.", text=True)
            with os.fdopen(fd, "w") as f:
                for node, n in placed:
                    f.write((node + "\n") * n)
            extra["SLURM_HOSTFILE"] = path
            # sbatch --ntasks-per-node's input variable would make srun warn
            # that it cannot honour it for an uneven layout.
            extra["SLURM_NTASKS_PER_NODE"] = None
            argv += ["--distribution=arbitrary"]
    return argv + list(command), extra

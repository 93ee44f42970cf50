"""Outside Slurm: the ranks on this host, started by tandem-run.

tandem-run is Tandem's one launcher for a host (the TCP store with a fresh
token, the identity variables, a failed rank or a signal ending every rank:
docs/bootstrap.md); horovodrun only gives it -np and the command. A host in
-H that is not this one is refused: starting ranks on other hosts over ssh
is not provided, and inside an allocation srun reaches them instead.
"""

from tandem._horovodrun import hosts as hostlist


class LocalError(ValueError):
    pass


def check_local(host_slots, np):
    """The ranks placed on this host; an error naming a remote host."""
    if host_slots is None:
        return [("localhost", np)]
    local = hostlist.local_names()
    for host, _ in host_slots:
        if host not in local and host.split(".")[0] not in local:
            raise LocalError(
                "-H: host %s is not this host; outside a Slurm allocation horovodrun starts "
                "ranks on this host only (no ssh launch). Run it inside salloc or sbatch, where "
                "the ranks go to the allocation's nodes, or use srun --horovod=on" % host)
    return hostlist.assign(host_slots, np)


def tandem_run_command(tandem_run, np, elastic, command):
    argv = [tandem_run, "-np", str(np), "--label"]
    if elastic:
        argv.append("--elastic")
    return argv + ["--"] + list(command)

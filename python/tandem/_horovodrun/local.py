"""Outside Slurm: where the ranks go, and tandem-run on this host.

tandem-run is Tandem's one launcher for a host (the TCP store with a fresh
token, the identity variables, a failed rank or a signal ending every rank:
docs/bootstrap.md). When every host of -H is this one, horovodrun only gives
it -np and the command; when some are not, it still runs the job, and ssh.py
carries those ranks to their hosts.
"""

from tandem._horovodrun import hosts as hostlist


def placement(host_slots, np):
    """[(host, ranks on it)]: -H's hosts filled in order, or all here."""
    if host_slots is None:
        return [("localhost", np)]
    return hostlist.assign(host_slots, np)


def tandem_run_command(tandem_run, np, elastic, command):
    argv = [tandem_run, "-np", str(np), "--label"]
    if elastic:
        argv.append("--elastic")
    return argv + ["--"] + list(command)

"""Outside Slurm, with -H naming other hosts: their ranks start over ssh.

As Horovod's Gloo launcher does it: one ssh session per rank on another
host (``-o PasswordAuthentication=no -o StrictHostKeyChecking=no``, with
-p/--ssh-port and -i/--ssh-identity-file), the rank getting horovodrun's
environment but the few names Horovod leaves out, the working directory and
its place in the layout. The rendezvous is tandem-run's, unchanged: it runs
the TCP store here (every address, a fresh token) and starts one
ssh_rank.py per rank as it starts any rank, so that its labelled output,
its "a rank failed: stop every rank" and its Ctrl-C handling cover the
remote ranks too; ssh_rank.py and remote_rank.py carry each rank to its
host and make its end there follow the job's. Paths are the same on every
host: this Python and this package run the far end (Horovod needs its own
install there the same way).

Before anything starts, every other host must resolve and answer ``ssh
HOST true`` without a password; the hosts that do not are named together
in one error.
"""

import json
import os
import shlex
import socket
import subprocess
import sys
import threading

from tandem._horovodrun import hosts as hostlist

CONNECT_TIMEOUT_S = 10
_PROBE_TIMEOUT_S = CONNECT_TIMEOUT_S + 20  # connect, then log in and run true
_HERE = os.path.dirname(os.path.abspath(__file__))


class SshError(ValueError):
    pass


def remote_hosts(placed):
    """The hosts of `placed` that are not this one, in order."""
    local = hostlist.local_names()
    return [h for h, _ in placed if h not in local and h.split(".")[0] not in local]


def ssh_argv(port, identity):
    """ssh's argv up to the host name."""
    argv = ["ssh", "-o", "PasswordAuthentication=no", "-o", "StrictHostKeyChecking=no",
            "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=%d" % CONNECT_TIMEOUT_S, "-T"]
    if port is not None:
        argv += ["-p", str(port)]
    if identity:
        argv += ["-i", identity]
    return argv


def check_options(port, identity):
    if port is not None and not 1 <= port <= 65535:
        raise SshError("--ssh-port %d: expected a TCP port, 1 to 65535" % port)
    if identity and not os.path.isfile(identity):
        raise SshError("--ssh-identity-file %s: no such file; give the private key ssh logs in "
                       "with" % identity)


def _probe(host, base):
    """None when `ssh host true` works; else why not."""
    try:
        socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        return "the name does not resolve (%s)" % exc.strerror
    try:
        r = subprocess.run(base + [host, "true"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "ssh %s true did not finish within %d s" % (host, _PROBE_TIMEOUT_S)
    except FileNotFoundError:
        return "cannot run ssh: it is not on PATH"
    if r.returncode != 0:
        said = [line for line in r.stderr.splitlines() if line.strip()]
        return "ssh %s true exited with status %d%s" % (host, r.returncode,
                                                        (": " + said[-1]) if said else "")
    return None


def check_hosts(hosts, port, identity):
    """Raises SshError naming every host that ssh cannot reach."""
    base = ssh_argv(port, identity)
    found = {}

    def probe(host):
        found[host] = _probe(host, base)
    threads = [threading.Thread(target=probe, args=(h,), daemon=True) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = [(h, found[h]) for h in hosts if found[h]]
    if bad:
        raise SshError("\n".join(
            ["outside a Slurm allocation the ranks on other hosts start over ssh, and these "
             "hosts cannot be reached:"] + ["  %s: %s" % hb for hb in bad] +
            ["each host in -H must resolve and accept ssh without a password (give "
             "-p/--ssh-port and -i/--ssh-identity-file as needed), or run inside an "
             "allocation, where srun starts the ranks"]))


def tandem_run_command(tandem_run, np, placed, port, identity, command):
    """tandem-run starting one ssh_rank.py per rank."""
    local = [h for h, _ in placed if h not in remote_hosts(placed)]
    remote = "exec %s -u %s" % (shlex.quote(sys.executable),
                                shlex.quote(os.path.join(_HERE, "remote_rank.py")))
    spec = {"hosts": placed, "local": local, "ssh": ssh_argv(port, identity), "remote": remote,
            "cwd": os.getcwd()}
    return ([tandem_run, "-np", str(np), "--label", "--", sys.executable,
             os.path.join(_HERE, "ssh_rank.py"), json.dumps(spec, separators=(",", ":"))]
            + list(command))

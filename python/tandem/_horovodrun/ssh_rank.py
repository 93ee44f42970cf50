"""One rank of a horovodrun job across hosts, on the launcher's side.

tandem-run starts one of these per rank, as it starts any rank: with the TCP
store's address, the job's token and the rank's number in its environment
(docs/bootstrap.md). This gives the rank its place in -H's layout
(HOROVOD_LOCAL_RANK, HOROVOD_CROSS_RANK, ...: the variables Horovod's Gloo
launcher sets) and starts it: on this host by exec; on another over ssh,
with the store's address rewritten to this host's address on the route to
that host, and the rank's environment, working directory and command sent
as one JSON line on ssh's stdin to remote_rank.py there, so that the token
is never on a command line.

tandem-run takes this process for the rank: it labels its output, and stops
its process group (this and ssh) when another rank fails or the job is
stopped. ssh's end closes the remote rank's stdin, and remote_rank.py stops
the rank's processes on that host. Standard library only, run as a file.

argv: SPEC COMMAND..., SPEC a JSON object: "hosts" [[host, ranks], ...] in
rank order, "local" [host, ...] (those run here), "ssh" (ssh's argv up to
the host), "remote" (the command ssh runs there), "cwd".
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys

# Horovod's launcher passes its whole environment to the ranks but these
# (its IGNORE_REGEXES, in horovod.runner.common.util.env), matched as it matches them.
_NOT_FORWARDED_PREFIXES = ("BASH_FUNC_",)
_NOT_FORWARDED = ("OLDPWD", "HOROVOD_SECRET_KEY")
_NOT_FORWARDED_SUFFIXES = ("CUDA_VISIBLE_DEVICES",)


def _forwarded(name):
    return not (name.startswith(_NOT_FORWARDED_PREFIXES) or name in _NOT_FORWARDED
                or name.endswith(_NOT_FORWARDED_SUFFIXES))


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """ssh is killed with this process, as this is with tandem-run."""
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _say(text):
    sys.stderr.write("horovodrun ERROR tools: %s\n" % text)
    sys.stderr.flush()


def place(hosts, rank):
    """(host, local rank, local size, cross rank, cross size) of `rank`."""
    first = 0
    for cross, (host, count) in enumerate(hosts):
        if rank < first + count:
            return host, rank - first, count, cross, len(hosts)
        first += count
    raise ValueError("rank %d is past the %d ranks of %s" % (rank, first, hosts))


def address_towards(host, port):
    """host:port of the store as `host` reaches it: this host's address on
    the route there (the store listens on every address)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.connect(sockaddr)  # a UDP connect sends nothing; it only picks the route
        mine = s.getsockname()[0]
    return ("[%s]:%s" if family == socket.AF_INET6 else "%s:%s") % (mine, port)


def rank_environment(environ, hosts, local):
    """The rank's environment and its host."""
    rank = int(environ["TANDEM_RANK"])
    host, local_rank, local_size, cross_rank, cross_size = place(hosts, rank)
    env = {k: v for k, v in environ.items() if _forwarded(k)}
    env.update(HOROVOD_HOSTNAME=host, HOROVOD_LOCAL_RANK=str(local_rank),
               HOROVOD_LOCAL_SIZE=str(local_size), HOROVOD_CROSS_RANK=str(cross_rank),
               HOROVOD_CROSS_SIZE=str(cross_size), PYTHONUNBUFFERED="1")
    if host not in local:
        port = environ["TANDEM_RENDEZVOUS_ADDR"].rsplit(":", 1)[1]
        env["TANDEM_RENDEZVOUS_ADDR"] = address_towards(host, port)
    return env, host


def main(argv):
    spec, command = json.loads(argv[0]), argv[1:]
    hosts = [(h, int(n)) for h, n in spec["hosts"]]
    try:
        env, host = rank_environment(os.environ, hosts, set(spec["local"]))
    except (KeyError, ValueError, OSError) as exc:
        _say("rank %s: cannot place it: %s" % (os.environ.get("TANDEM_RANK", "?"), exc))
        return 1
    if host in spec["local"]:
        try:
            os.execvpe(command[0], command, env)
        except OSError as exc:
            _say("cannot run %s: %s" % (command[0], exc.strerror))
            return 127
    line = json.dumps({"env": env, "cwd": spec["cwd"], "argv": command}) + "\n"
    try:
        ssh = subprocess.Popen(spec["ssh"] + [host, spec["remote"]], stdin=subprocess.PIPE,
                               preexec_fn=_die_with_parent)
    except OSError as exc:
        _say("cannot run %s: %s" % (spec["ssh"][0], exc.strerror))
        return 127
    try:
        ssh.stdin.write(line.encode())
        ssh.stdin.flush()
    except BrokenPipeError:
        pass  # ssh is gone already; its status says why
    # stdin stays open: its end is the remote rank's sign to stop.
    rc = ssh.wait()
    if rc == 255:
        _say("ssh to %s ended with status 255: ssh's own failure (its message is above) or "
             "the rank's exit status" % host)
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

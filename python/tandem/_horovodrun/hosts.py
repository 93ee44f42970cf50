"""-H / --hostfile, and where each rank goes.

Horovod's rules: ``-H host1:2,host2:2`` lists hosts with their slots (a
host without ``:slots`` has one); a hostfile has one host a line, ``host
slots=N``; ranks fill the hosts' slots in the order given, so ``-np 3 -H
a:2,b:2`` puts ranks 0 and 1 on a and rank 2 on b; more ranks than slots is
an error.
"""

import re
import socket

_HOST = re.compile(r"^[\w.-]+$")


class HostsError(ValueError):
    pass


def parse_hosts(text):
    """[(host, slots)] from -H's value."""
    found = []
    for item in text.split(","):
        item = item.strip()
        name, sep, slots = item.partition(":")
        if not _HOST.match(name) or (sep and not slots.isdigit()):
            raise HostsError("-H %s: '%s' is not host or host:slots (for example "
                             "node1:2,node2:2)" % (text, item))
        n = int(slots) if sep else 1
        if n < 1:
            raise HostsError("-H %s: %s has %d slots; give at least 1" % (text, name, n))
        if name in (h for h, _ in found):
            raise HostsError("-H %s: %s is listed twice; give each host once with all its "
                             "slots" % (text, name))
        found.append((name, n))
    return found


def parse_hostfile(path):
    """[(host, slots)] from a hostfile: 'host slots=N' lines, '#' comments."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise HostsError("--hostfile %s: %s" % (path, exc.strerror)) from None
    items = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^([\w.-]+)(?:\s+slots\s*=\s*(\d+))?$", line)
        if not m:
            raise HostsError("--hostfile %s line %d: '%s' is not 'host slots=N'"
                             % (path, number, line))
        items.append("%s:%s" % (m.group(1), m.group(2) or "1"))
    if not items:
        raise HostsError("--hostfile %s lists no host" % path)
    return parse_hosts(",".join(items))


def assign(hosts, np):
    """[(host, ranks on it)] for np ranks filling the hosts in order; hosts
    that get none are left out."""
    total = sum(slots for _, slots in hosts)
    if np > total:
        raise HostsError("-np %d asks for more ranks than the hosts have slots (%d: %s); give "
                         "more slots in -H, or a smaller -np"
                         % (np, total, ",".join("%s:%d" % h for h in hosts)))
    placed, left = [], np
    for host, slots in hosts:
        if left == 0:
            break
        n = min(slots, left)
        placed.append((host, n))
        left -= n
    return placed


def local_names():
    """The names that mean this host."""
    names = {"localhost", "127.0.0.1", "::1"}
    for name in (socket.gethostname(), socket.getfqdn()):
        names.add(name)
        names.add(name.split(".")[0])
    return names

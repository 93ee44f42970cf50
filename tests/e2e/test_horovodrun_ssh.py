"""horovodrun outside Slurm, across hosts over real ssh, as Horovod's Gloo
launcher runs: `horovodrun -np 4 -H node1:2,node2:2 -p PORT -i KEY python
script` from the host's namespace, no allocation (no SLURM_* variable), with
an sshd of the test's own in node1's and node2's namespaces (their host
names set, as the cluster's slurmd have them). The ranks join tandem-run's
store on the host and allreduce across the two nodes; then rank 1 kills
itself after hvd.init(): the job ends on both nodes with tandem-run's and
horovodrun's error lines, and no process of the job (the script's unique
name) is left on any host, nor an ssh session under either sshd; the same
after Ctrl-C (SIGINT to horovodrun) while four ranks sleep. A host that does
not resolve and one whose sshd does not answer are named in one error before
anything starts."""

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "python" / "workers" / "horovodrun_allreduce.py"
LINE = re.compile(r"^\[(\d+)\]<stdout>:rank (\d+) of (\d+) local (\d+)/(\d+) sum (\S+) on (\S+)$")
SSHD = "/usr/sbin/sshd"
PORT = 2222  # not 22, so that -p is what reaches it


def _wait_listening(addr, port, proc, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("sshd for %s exited with status %d:\n%s"
                        % (addr, proc.returncode, proc.stderr.read()))
        try:
            socket.create_connection((addr, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail("sshd for %s:%d did not listen within %d s" % (addr, port, timeout))


@pytest.fixture(scope="module")
def sshd(cluster):
    """{'addrs': [node1's, node2's], 'key': client key, 'env': horovodrun's
    environment, 'pids': sshd pids, 'dir': scratch}; both sshd stopped at
    the end."""
    if not os.path.exists(SSHD):
        pytest.fail("%s is missing: contrib/install-deps.sh installs openssh-server" % SSHD)
    conf = dict(line.split("=", 1) for line in
                (cluster.dir / "cluster.env").read_text().split())
    subnet = conf["SUBNET"].rsplit(".", 1)[0]
    scratch = cluster.dir / "ssh"
    scratch.mkdir()
    keys = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
    subprocess.run(keys + ["-f", str(scratch / "host_key")], check=True)
    subprocess.run(keys + ["-f", str(scratch / "id")], check=True)
    shutil.copy(scratch / "id.pub", scratch / "authorized_keys")
    os.makedirs("/run/sshd", exist_ok=True)  # Debian's sshd's privilege separation dir
    # ssh records the nodes' key in the test's own known_hosts, not root's.
    (scratch / "bin").mkdir()
    wrapper = scratch / "bin" / "ssh"
    wrapper.write_text("#!/bin/sh\nexec /usr/bin/ssh -o UserKnownHostsFile=%s \"$@\"\n"
                       % (scratch / "known_hosts"))
    wrapper.chmod(0o755)
    procs, addrs = [], []
    try:
        for n in (1, 2):
            addr = "%s.%d" % (subnet, 10 + n)
            cfg = scratch / ("sshd%d.conf" % n)
            cfg.write_text("\n".join([
                "Port %d" % PORT, "ListenAddress %s" % addr,
                "HostKey %s" % (scratch / "host_key"),
                "PidFile %s" % (scratch / ("sshd%d.pid" % n)),
                "AuthorizedKeysFile %s" % (scratch / "authorized_keys"),
                "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", ""]))
            ns = "/run/netns/tandem-%s-node%d" % (cluster.name, n)
            # sh execs sshd: the Popen's pid is sshd's, the parent of every session.
            p = subprocess.Popen(["nsenter", "--net=" + ns, "unshare", "--uts", "sh", "-c",
                                  "hostname node%d && exec %s -D -e -f %s" % (n, SSHD, cfg)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            _wait_listening(addr, PORT, p)
            addrs.append(addr)
        env = {k: v for k, v in cluster.env.items()
               if not k.startswith("SLURM_") and k not in ("TANDEM_LIBRARY", "LD_PRELOAD")}
        env.update(PYTHONPATH=cluster.python_dir, PATH="%s:%s" % (scratch / "bin", env["PATH"]))
        yield {"addrs": addrs, "key": str(scratch / "id"), "env": env,
               "pids": [p.pid for p in procs], "dir": scratch}
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _horovodrun(cluster, sshd, python, script, *args, timeout=120):
    a1, a2 = sshd["addrs"]
    cmd = [str(cluster.build / "tools" / "horovodrun"), "-np", "4", "-H", "%s:2,%s:2" % (a1, a2),
           "-p", str(PORT), "-i", sshd["key"], python, str(script), *args]
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=sshd["env"],
                       cwd=sshd["dir"])
    return r, time.monotonic() - start


def _left(name, sshd_pids):
    """What of a job is still running: its ranks, and sshd's sessions."""
    ranks = subprocess.run(["pgrep", "-af", name], capture_output=True, text=True).stdout
    sessions = "".join(subprocess.run(["pgrep", "-a", "-P", str(pid)], capture_output=True,
                                      text=True).stdout for pid in sshd_pids)
    return (ranks + sessions).strip()


def test_horovodrun_over_ssh_runs_and_fails_across_hosts(cluster, sshd, any_torch_python):
    name = "hvdssh%d.py" % os.getpid()  # pgrep finds this job's ranks and only them
    script = sshd["dir"] / name
    shutil.copy(SCRIPT, script)

    r, took = _horovodrun(cluster, sshd, any_torch_python, script)
    assert r.returncode == 0, (r.stdout, r.stderr)
    found = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        if m:
            assert m.group(1) == m.group(2), line
            found[int(m.group(1))] = (int(m.group(3)), int(m.group(4)), int(m.group(5)),
                                      float(m.group(6)), m.group(7))
    assert found == {0: (4, 0, 2, 10.0, "node1"), 1: (4, 1, 2, 10.0, "node1"),
                     2: (4, 0, 2, 10.0, "node2"), 3: (4, 1, 2, 10.0, "node2")}, (r.stdout,
                                                                                 r.stderr)
    assert sorted(re.findall(r"^\[(\d)\]<stderr>:stderr of rank \1$", r.stderr, re.M)) == \
        ["0", "1", "2", "3"], r.stderr
    print("allreduce over ssh: %.1f s" % took)

    # Rank 1 (node1) kills itself; rank 0 on node1 and ranks 2, 3 on node2 wait in
    # the allreduce until the job stops them.
    r, took = _horovodrun(cluster, sshd, any_torch_python, script, "1")
    assert r.returncode == 137, (r.returncode, r.stdout, r.stderr)
    assert "tandem-run ERROR tools: rank 1 exited with status 137; stopping the job" in r.stderr, \
        r.stderr
    assert "horovodrun ERROR tools: the job failed: tandem-run exited with status 137" in \
        r.stderr, r.stderr
    assert took < 60, (took, r.stderr)
    print("failing rank over ssh: %.1f s" % took)
    deadline = time.monotonic() + 10
    while _left(name, sshd["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _left(name, sshd["pids"]), _left(name, sshd["pids"])


def test_ctrl_c_stops_every_remote_rank(cluster, sshd):
    name = "hvdsshsleep%d.py" % os.getpid()
    script = sshd["dir"] / name
    script.write_text("import time\nprint('up', flush=True)\ntime.sleep(120)\n")
    a1, a2 = sshd["addrs"]
    cmd = [str(cluster.build / "tools" / "horovodrun"), "-np", "4", "-H", "%s:2,%s:2" % (a1, a2),
           "-p", str(PORT), "-i", sshd["key"], "/usr/bin/python3", str(script)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sshd["env"], cwd=sshd["dir"])
    watchdog = threading.Timer(60, p.kill)  # the wait for the ranks' lines ends
    watchdog.start()
    try:
        up = []  # every rank says so before it sleeps
        while len(up) < 4:
            line = p.stdout.readline()
            if not line:
                break
            up += re.findall(r"^\[(\d)\]<stdout>:up$", line)
        assert sorted(up) == ["0", "1", "2", "3"] and p.poll() is None, (up, p.communicate())
        p.send_signal(signal.SIGINT)  # what the terminal's Ctrl-C sends horovodrun
        out, err = p.communicate(timeout=30)
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, (p.returncode, out, err)
    assert "horovodrun ERROR tools: stopped the job on SIGINT" in err, err
    deadline = time.monotonic() + 10
    while _left(name, sshd["pids"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _left(name, sshd["pids"]), _left(name, sshd["pids"])


def test_horovodrun_names_the_hosts_ssh_cannot_reach(cluster, sshd):
    a1, _ = sshd["addrs"]
    cmd = [str(cluster.build / "tools" / "horovodrun"), "-np", "2", "-H",
           "%s:1,nosuchhost.invalid:1" % a1, "-p", str(PORT + 1), "-i", sshd["key"], "true"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=sshd["env"])
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "these hosts cannot be reached:" in r.stderr, r.stderr
    assert "  %s: ssh %s true exited with status 255" % (a1, a1) in r.stderr, r.stderr
    assert "  nosuchhost.invalid: the name does not resolve" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout

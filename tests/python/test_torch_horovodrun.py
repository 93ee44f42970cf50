"""horovodrun outside Slurm: -H localhost:N runs N ranks of a
horovod.torch script on this host through tandem-run, with Horovod's
``[rank]<stdout>:`` lines, --output-filename's files, and a dead rank
ending the job with an error and no process left."""

import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import WORKERS

SCRIPT = str(WORKERS / "horovodrun_allreduce.py")


@pytest.fixture(scope="module")
def horovodrun(build_dir):
    path = build_dir / "tools" / "horovodrun"
    if not path.exists():
        pytest.fail("%s is missing: build first" % path)
    return str(path)


def _env(py_env):
    return {k: v for k, v in py_env.items() if not k.startswith("SLURM_")}


def test_two_local_ranks_allreduce(horovodrun, py_env, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    r = subprocess.run([horovodrun, "-np", "2", "-H", "localhost:2", "--output-filename",
                        str(out), sys.executable, SCRIPT], capture_output=True, text=True,
                       timeout=120, env=_env(py_env))
    assert r.returncode == 0, r.stderr
    here = socket.gethostname()
    assert sorted(r.stdout.splitlines()) == ["[0]<stdout>:rank 0 of 2 local 0/2 sum 3 on " + here,
                                             "[1]<stdout>:rank 1 of 2 local 1/2 sum 3 on " + here]
    assert "[1]<stderr>:stderr of rank 1" in r.stderr.splitlines()
    assert (out / "rank.1" / "stdout").read_text() == "rank 1 of 2 local 1/2 sum 3 on %s\n" % here
    assert (out / "rank.0" / "stderr").read_text().endswith("stderr of rank 0\n")


def test_a_dead_rank_ends_the_job(horovodrun, py_env):
    pytest.importorskip("torch")
    r = subprocess.run([horovodrun, "-np", "2", sys.executable, SCRIPT, "1"],
                       capture_output=True, text=True, timeout=120, env=_env(py_env))
    assert r.returncode == 128 + 9, r.stderr
    assert "rank 1 was killed by signal 9" in r.stderr
    assert "horovodrun ERROR tools: the job failed: tandem-run exited with status 137" in r.stderr
    left = subprocess.run(["pgrep", "-f", SCRIPT], capture_output=True, text=True)
    assert left.stdout == "", "ranks left running: " + left.stdout


def test_ctrl_c_stops_every_rank(horovodrun, py_env, tmp_path):
    marker = "horovodrun-ctrl-c-%s" % tmp_path.name
    started = tmp_path / "started"
    code = "import os, time, sys; open(sys.argv[1] + os.environ['HOROVOD_RANK'], 'w'); " \
           "time.sleep(300)"
    p = subprocess.Popen([horovodrun, "-np", "2", sys.executable, "-c", code, str(started),
                          marker], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(py_env))
    deadline = time.monotonic() + 60
    while not all((tmp_path / ("started%d" % r)).exists() for r in (0, 1)):
        assert time.monotonic() < deadline and p.poll() is None, p.stderr.read() if p.poll() else ""
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGINT, err
    assert "horovodrun ERROR tools: stopped the job on SIGINT" in err
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout == "", "ranks left running: " + left.stdout


def test_min_np_makes_an_elastic_job(horovodrun, py_env):
    pytest.importorskip("torch")
    r = subprocess.run([horovodrun, "--min-np", "2", "--max-np", "4", "-np", "2", "--verbose",
                        sys.executable, SCRIPT], capture_output=True, text=True, timeout=120,
                       env=_env(py_env))
    assert r.returncode == 0, r.stderr
    assert len([ln for ln in r.stdout.splitlines() if ln.endswith("sum 3 on " +
                                                                   socket.gethostname())]) == 2
    assert "horovodrun: sets TANDEM_ELASTIC_MIN_NP=2" in r.stderr
    assert "--elastic --" in r.stderr  # the tandem-run line --verbose prints
    assert "elastic job: 1 generation, the last of 2 ranks; 2 processes finished" in r.stderr

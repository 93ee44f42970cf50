"""Elastic jobs under real srun --horovod=elastic (docs/elastic.md).

tests/python/workers/elastic_torch.py trains the same batch on every rank at
every step, so a job that loses ranks and goes on from its last commit must
end with the parameters of an unfaulted run (computed once, by one process);
every rank that finishes must have them, and the ElasticSampler ledger must
show every sample once per epoch outside the steps a failure rolled back.
Each drill prints "fault -> first step at size N: S s" (run with -s; the
figures in docs/elastic.md come from contrib/elastic-drills.sh, which runs
these drills and the longer ones, a node cut off until Slurm marks it down).

Short timeouts keep CI quick: TANDEM_TIMEOUT (a silent peer) and
TANDEM_ELASTIC_PING_TIMEOUT (a stopped or cut-off process).
"""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKERS = ROOT / "tests" / "python" / "workers"
sys.path.insert(0, str(WORKERS))
import elastic_ledger  # noqa: E402
import horovod_checkout  # noqa: E402

STEPS, SAMPLES, BATCH = 40, 96, 2
TOLERANCE = 1e-5  # averaging 3 equal float32 gradients is not exact; 40 steps of momentum SGD drift ~1e-6; a lost or doubled step moves ~1e-2
FAST = {"TANDEM_TIMEOUT": "6", "TANDEM_ELASTIC_PING_TIMEOUT": "3", "HOROVOD_ELASTIC_TIMEOUT": "60"}


class Job:
    """An elastic srun of a worker in the background, with its output folder."""

    def __init__(self, cluster, tag, srun_args, command, env=None, starts=None):
        self.cluster = cluster
        self.dir = cluster.dir / "e2e" / f"elastic-{tag}-{os.getpid()}-{time.monotonic_ns()}"
        self.dir.mkdir(parents=True)
        self.dir.chmod(0o777)
        self.log = open(self.dir / "srun.out", "w")
        self.env = cluster._env(dict(FAST, TANDEM_ELASTIC_DIR=str(self.dir / "services"),
                                     **(env or {})))
        self.proc = subprocess.Popen(["srun", "--immediate=10", *srun_args, *command],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=self.dir)
        self.job = None
        if starts:
            self.wait_started(starts)

    def wait_started(self, starts, deadline_s=120):
        deadline = time.monotonic() + deadline_s
        while not all((self.dir / f"pid.{s}").exists() for s in starts):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.finish()
                pytest.fail("the ranks did not start:\n" + self.output())
            time.sleep(0.1)
        self.pids = {s: int((self.dir / f"pid.{s}").read_text()) for s in starts}
        self.job = task_env(self.pids[starts[0]], "SLURM_JOB_ID")

    def progress(self, start):
        try:
            return int((self.dir / f"progress.{start}").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0

    def wait_progress(self, start, step, deadline_s=120):
        deadline = time.monotonic() + deadline_s
        while self.progress(start) < step:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.finish()
                pytest.fail(f"start rank {start} did not reach step {step}:\n" + self.output())
            time.sleep(0.05)

    def signal(self, start, sig):
        os.kill(self.pids[start], sig)
        return time.time()

    def wait(self, deadline_s=240):
        try:
            self.proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            self.finish()
            pytest.fail(f"srun still running {deadline_s} s later:\n" + self.output())
        return self.proc.returncode

    def output(self):
        self.log.flush()
        return (self.dir / "srun.out").read_text(errors="replace")

    def finish(self):
        for pid in getattr(self, "pids", {}).values():
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            if self.job:
                self.cluster.run(["scancel", self.job], timeout=30)
        self.log.close()


def task_env(pid, name):
    for item in pathlib.Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if item.startswith(name.encode() + b"="):
            return item.split(b"=", 1)[1].decode()
    raise AssertionError(f"task {pid} has no {name}")


def worker_command(python, out_dir, *extra):
    return [python, str(WORKERS / "elastic_torch.py"), str(out_dir), "--steps", str(STEPS),
            "--samples", str(SAMPLES), "--batch", str(BATCH), "--step-sleep", "0.1",
            *[str(a) for a in extra]]


def unfaulted(cluster, tmp_path_factory, *extra):
    """The unfaulted run's parameters, from one process (the same batch on
    every rank makes the result independent of the number of ranks)."""
    out = tmp_path_factory.mktemp("elastic-reference")
    env = dict(os.environ, PYTHONPATH=cluster.python_dir, TANDEM_LIBRARY=cluster.engine)
    r = subprocess.run(worker_command("/usr/bin/python3", out)[:-2] + list(extra),
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return elastic_ledger.finals(str(out))[0]["params"]


@pytest.fixture(scope="module")
def reference(cluster, tmp_path_factory):
    return unfaulted(cluster, tmp_path_factory)


def recovery_time(job, fault_time, size):
    """Seconds from the fault to the first step a survivor completed at the new size."""
    after = [r for r in elastic_ledger.records(str(job.dir))
             if "step" in r and "size" in r and r["t"] > fault_time and r["size"] == size]
    assert after, "no step at size %d after the fault:\n%s" % (size, job.output())
    return min(r["t"] for r in after) - fault_time


def check_survivors(job, reference, survivors, size, ledger=True, steps=STEPS):
    out = job.output()
    done = elastic_ledger.finals(str(job.dir))
    assert sorted(done) == sorted(survivors), out
    for start, f in done.items():
        assert f["size"] == size and f["steps"] == steps, (start, f, out)
        worst = elastic_ledger.max_difference(f["params"], reference)
        assert worst <= TOLERANCE, f"start rank {start} ends {worst} from the unfaulted run"
    if ledger:
        assert elastic_ledger.check_ledger(str(job.dir), SAMPLES, BATCH) >= 1
    return done


class Worker:
    """The torch or the Keras drill script, with its unfaulted parameters and
    the environment its interpreter needs (Keras 2 as tf_keras)."""

    def __init__(self, command, reference, ledger, env=None):
        self.command, self.reference, self.ledger = command, reference, ledger
        self.env = env or {}


@pytest.fixture(scope="module")
def torch_worker(cluster, reference, tmp_path_factory):
    worker = Worker(worker_command("/usr/bin/python3", "."), reference, True)
    worker.reference80 = unfaulted(cluster, tmp_path_factory, "--steps", "80")
    return worker


_KERAS_REFERENCE = {}


@pytest.fixture
def keras_worker(cluster, keras_python, keras_env, tmp_path_factory):
    """The Keras script on every TensorFlow interpreter: Keras 3
    (tandem.keras.elastic) and Keras 2 (tandem.keras2.elastic)."""
    if keras_python not in _KERAS_REFERENCE:
        _KERAS_REFERENCE[keras_python] = keras_reference(cluster, keras_python, keras_env,
                                                         tmp_path_factory)
    return Worker([keras_python, str(WORKERS / "elastic_keras.py"), ".", "--step-sleep", "0.2"],
                  _KERAS_REFERENCE[keras_python], False, keras_env)


# Drills CI leaves to contrib/elastic-drills.sh: the node cut off waits over
# a minute for Slurm, and the Keras script's other drills repeat the torch
# ones with a slower start.
long_drill = pytest.mark.skipif(
    os.environ.get("TANDEM_ELASTIC_LONG_DRILLS") != "1",
    reason="long drill: contrib/elastic-drills.sh runs it (TANDEM_ELASTIC_LONG_DRILLS=1)")


def drill(cluster, worker, tag, fault, survivors, ranks_after, size_after):
    job = Job(cluster, tag, ["-N", "3", "-n", "3", "--horovod=elastic"], worker.command,
              env=worker.env, starts=[0, 1, 2])
    try:
        job.wait_progress(0, 8, deadline_s=240)
        t = fault(job)
        rc = job.wait()
        out = job.output()
        done = check_survivors(job, worker.reference, survivors, size_after, worker.ledger)
        assert {s: f["rank"] for s, f in done.items()} == ranks_after
        took = recovery_time(job, t, size_after)
        print(f"\n{tag}: fault -> first step at size {size_after}: {took:.1f} s "
              f"(load {os.getloadavg()[0]:.1f})")
        assert f"the last of {size_after} ranks; {len(survivors)} processes finished" in out, out
        return job, rc, out
    finally:
        job.finish()


def sigkill(start):
    return lambda job: job.signal(start, signal.SIGKILL)


def test_sigkill_of_a_rank(cluster, torch_worker):
    drill(cluster, torch_worker, "kill", sigkill(1), [0, 2], {0: 0, 2: 1}, 2)


def test_sigkill_of_rank_0(cluster, torch_worker):
    drill(cluster, torch_worker, "kill0", sigkill(0), [1, 2], {1: 0, 2: 1}, 2)


def test_keras_sigkill_of_a_rank(cluster, keras_worker):
    drill(cluster, keras_worker, "keras-kill", sigkill(1), [0, 2], {0: 0, 2: 1}, 2)


@long_drill
def test_keras_sigkill_of_rank_0(cluster, keras_worker):
    drill(cluster, keras_worker, "keras-kill0", sigkill(0), [1, 2], {1: 0, 2: 1}, 2)


def stop_drill(cluster, worker, tag, wake):
    """Stops start rank 2 (SIGSTOP). The others give up on it after
    TANDEM_TIMEOUT and the service ejects it (no answer to its ping). With
    `wake`, it is let go once the job has moved on: it is refused
    ("has been removed") and exits. Without, it would never exit: once the
    others are done, srun ends the step."""
    job = Job(cluster, tag, ["-N", "3", "-n", "3", "--horovod=elastic"],
              worker.command + ["--steps", "80"] if worker.ledger else worker.command,
              env=worker.env, starts=[0, 1, 2])
    try:
        job.wait_progress(0, 8, deadline_s=240)
        t = job.signal(2, signal.SIGSTOP)
        deadline = time.monotonic() + 240
        if wake:
            while "generation 1 formed" not in job.output():
                assert time.monotonic() < deadline and job.proc.poll() is None, job.output()
                time.sleep(0.2)
            job.signal(2, signal.SIGCONT)
        job.wait()
        out = job.output()
        if worker.ledger:  # the torch script, run for 80 steps here
            check_survivors(job, worker.reference80, [0, 1], 2, steps=80)
        else:
            check_survivors(job, worker.reference, [0, 1], 2, ledger=False)
        assert "did not answer the service's ping" in out, out
        if wake:
            assert "node3[0] has been removed from elastic job" in out, out
        else:
            assert "the elastic job is over; ending the step: 1 ejected process still hold" in out
        print(f"\n{tag}: fault -> first step at size 2: {recovery_time(job, t, 2):.1f} s "
              f"(TANDEM_TIMEOUT={FAST['TANDEM_TIMEOUT']}, ping {FAST['TANDEM_ELASTIC_PING_TIMEOUT']} s, "
              f"load {os.getloadavg()[0]:.1f})")
    finally:
        job.finish()


def test_sigstop_of_a_rank_is_ejected_and_refused_when_it_wakes(cluster, torch_worker):
    stop_drill(cluster, torch_worker, "stop", wake=True)


def test_a_stopped_rank_that_never_wakes_does_not_hold_the_step(cluster, torch_worker):
    stop_drill(cluster, torch_worker, "stop-forever", wake=False)


@long_drill
def test_keras_sigstop_of_a_rank(cluster, keras_worker):
    stop_drill(cluster, keras_worker, "keras-stop", wake=True)


def subnet_prefix(cluster):
    values = dict(line.split("=", 1) for line in
                  (cluster.dir / "cluster.env").read_text().split() if "=" in line)
    return values["SUBNET"].rsplit(".", 1)[0]


def cut_drill(cluster, worker, tag):
    prefix = subnet_prefix(cluster)
    ns = {n: f"tandem-{cluster.name}-{n}" for n in ("node1", "node2")}
    addr = {n: f"{prefix}.{10 + int(n[4:])}" for n in ("node1", "node2")}
    routes = [(ns["node1"], addr["node2"]), (ns["node2"], addr["node1"])]

    def cut(job):
        for netns, peer in routes:
            subprocess.run(["ip", "-n", netns, "route", "add", "blackhole", peer + "/32"],
                           check=True)
        return time.time()

    try:
        _, _, out = drill(cluster, worker, tag, cut, [0, 2], {0: 0, 2: 1}, 2)
        assert "node node2 excluded from the job" in out, out
        assert "node2[0] has been removed from elastic job" in out, out
    finally:
        for netns, peer in routes:
            subprocess.run(["ip", "-n", netns, "route", "del", "blackhole", peer + "/32"])


def test_cut_link_between_two_nodes(cluster, torch_worker):
    cut_drill(cluster, torch_worker, "cut")


@long_drill
def test_keras_cut_link_between_two_nodes(cluster, keras_worker):
    cut_drill(cluster, keras_worker, "keras-cut")


def test_a_job_grows_by_an_overlap_step_and_shrinks_back(cluster, reference):
    # A 3-node allocation; the first step runs on two nodes, a second step
    # joins on the third, then is cancelled.
    alloc = subprocess.Popen(["salloc", "--immediate=10", "-N", "3", "--no-shell"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=cluster.env, cwd=cluster.dir)
    out_alloc, _ = alloc.communicate(timeout=60)
    job_id = [w for w in out_alloc.split() if w.isdigit()]
    assert job_id, out_alloc
    job_id = job_id[0]
    first = grow = None
    try:
        first = Job(cluster, "grow", ["--jobid", job_id, "-N", "2", "-n", "2", "-w", "node1,node2",
                                      "--exact", "--horovod=elastic"],
                    worker_command("/usr/bin/python3", ".", "--steps", "120"), starts=[0, 1])
        # The first two passed to worker_command win over these; --steps 120
        # gives the new step time to start and join.
        first.wait_progress(0, 6)
        grow_cmd = worker_command("/usr/bin/python3", first.dir, "--steps", "120")
        grow = subprocess.Popen(["srun", "--jobid", job_id, "--overlap", "-N", "1", "-n", "1",
                                 "-w", "node3", "--horovod=elastic", *grow_cmd],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=first.env, cwd=first.dir)
        deadline = time.monotonic() + 120
        while not (first.dir / "progress.2").exists():
            assert time.monotonic() < deadline and first.proc.poll() is None, first.output()
            time.sleep(0.1)
        grown = first.progress(0)
        assert open(first.dir / "progress.2").read().split()[2] == "3"
        subprocess.run(["scancel", f"{job_id}.1"], env=cluster.env, timeout=30)
        grow.wait(timeout=60)
        first.wait()
        out = first.output()
        finals = elastic_ledger.finals(str(first.dir))
        assert sorted(finals) == [0, 1], out
        sizes = [r["size"] for r in sorted(elastic_ledger.records(str(first.dir)),
                                           key=lambda r: r["t"])
                 if "indices" in r and r["start"] == 0]
        assert 3 in sizes and sizes[-1] == 2 and sizes[0] == 2, sizes
        print(f"\ngrow at step {grown}: sizes seen by rank 0: "
              f"{sorted(set(sizes))}; {first.output().count('generation')} generation lines")
        # The parameters are the unfaulted run's (120 steps here).
        assert all(f["steps"] == 120 for f in finals.values())
    finally:
        if grow and grow.poll() is None:
            grow.kill()
        if first:
            first.finish()
        subprocess.run(["scancel", job_id], env=cluster.env, timeout=30)


def horovod_main(name, dest):
    text = horovod_checkout.show("test/integration/data/" + name)
    dest.write_text(text)
    return dest


@pytest.mark.parametrize("exit_mode", ["exception", "kill"])
def test_horovods_elastic_torch_main_fault_tolerance(cluster, exit_mode):
    """Horovod's test_fault_tolerance_without_scaling (test/integration/
    elastic_common.py) on two nodes of two slots: start rank 0 fails at
    epoch 1, its host is blacklisted, start rank 2 becomes rank 0."""
    scratch = cluster.dir / "e2e" / f"hvd-main-{exit_mode}-{os.getpid()}"
    scratch.mkdir(parents=True)
    main = horovod_main("elastic_torch_main.py", scratch / "elastic_torch_main.py")
    logfile = scratch / "log.txt"
    r = cluster.srun("-N", "2", "-n", "4", "--ntasks-per-node=2", "--horovod=elastic",
                     "/usr/bin/python3", str(main), "--logfile", str(logfile),
                     "--exit-schedule", json.dumps({str((1, 0)): [0]}), "--exit-mode", exit_mode,
                     env=dict(FAST, TANDEM_ELASTIC_DIR=str(scratch)), timeout=240)
    results = [json.loads(line) for line in logfile.read_text().splitlines()]
    out = r.stdout + r.stderr
    assert len(results) == 3, out
    assert (results[0]["start_rank"], results[0]["size"], results[0]["rendezvous"]) == (0, 4, 1)
    assert (results[1]["start_rank"], results[1]["size"], results[1]["rendezvous"]) == (2, 2, 2)
    assert (results[2]["start_rank"], results[2]["size"], results[2]["rendezvous"]) == (2, 2, 2)
    assert "node1[1] has been removed from elastic job" in out, out


def keras_reference(cluster, python, keras_env, tmp_path_factory):
    out = tmp_path_factory.mktemp("elastic-keras-reference")
    env = dict(os.environ, PYTHONPATH=cluster.python_dir, TANDEM_LIBRARY=cluster.engine,
               **keras_env)
    r = subprocess.run([python, str(WORKERS / "elastic_keras.py"), str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return elastic_ledger.finals(str(out))[0]["params"]


def node_state(cluster, node):
    r = cluster.run(["scontrol", "-o", "show", "node", node], timeout=30)
    fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
    return fields.get("State", "")


def node_cut_drill(cluster, worker, tag):
    """node3 loses every link (its veth on the host goes down): the job goes
    on without it, Slurm marks it DOWN (SlurmdTimeout), and the test brings
    it back and resumes it. Over a minute of waiting for Slurm: run by
    contrib/elastic-drills.sh (TANDEM_ELASTIC_LONG_DRILLS=1), not by CI."""
    values = dict(line.split("=", 1) for line in
                  (cluster.dir / "cluster.env").read_text().split() if "=" in line)
    veth = f"td{values['SLOT']}n3"
    job = Job(cluster, tag, ["-N", "3", "-n", "3", "--horovod=elastic"], worker.command,
              env=worker.env, starts=[0, 1, 2])
    try:
        job.wait_progress(0, 8, deadline_s=240)
        subprocess.run(["ip", "link", "set", veth, "down"], check=True)
        t = time.time()
        deadline = time.monotonic() + 240
        while len(elastic_ledger.finals(str(job.dir))) < 2 or "DOWN" not in node_state(cluster, "node3"):
            assert time.monotonic() < deadline, job.output() + node_state(cluster, "node3")
            time.sleep(1)
        marked_down = time.time() - t
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
        cluster.run(["scontrol", "update", "nodename=node3", "state=resume"], timeout=30)
        job.wait(deadline_s=240)
        out = job.output()
        check_survivors(job, worker.reference, [0, 1], 2, worker.ledger)
        took = recovery_time(job, t, 2)
        print(f"\n{tag}: fault -> first step at size 2: {took:.1f} s; Slurm marked "
              f"node3 DOWN after {marked_down:.0f} s")
        assert "node node3 excluded from the job" in out, out
    finally:
        subprocess.run(["ip", "link", "set", veth, "up"])
        job.finish()
        deadline = time.monotonic() + 120
        while any(s in node_state(cluster, "node3") for s in ("DOWN", "NOT_RESPONDING")):
            cluster.run(["scontrol", "update", "nodename=node3", "state=resume"], timeout=30)
            if time.monotonic() > deadline:
                pytest.fail("node3 is still " + node_state(cluster, "node3"))
            time.sleep(1)


# Task 1 fails; task 0 outlives it by 4 s unless the step is ended (as in
# test_step_end.py, which checks that --horovod=on steps do end).
OUTLIVE = ("m=failed.$SLURM_JOB_ID.$SLURM_STEP_ID; "
           "if [ $SLURM_PROCID = 1 ]; then touch $m; exit 3; fi; "
           "for i in $(seq 600); do [ -e $m ] && break; sleep 0.1; done; sleep 4; "
           "echo task $SLURM_PROCID outlived the failed one")


def test_an_elastic_step_outlives_a_failed_task(cluster):
    r = cluster.srun("-N", "2", "-n", "2", "--horovod=elastic", "/bin/bash", "-c", OUTLIVE,
                     env={"TANDEM_ELASTIC_DIR": str(cluster.dir / "e2e" / "services")},
                     timeout=120)
    assert "task 0 outlived the failed one" in r.stdout, r.stdout + r.stderr


def test_kill_on_bad_exit_is_refused_for_an_elastic_step(cluster):
    r = cluster.srun("-N", "1", "-n", "1", "--kill-on-bad-exit=1", "--horovod=elastic", "true",
                     timeout=60)
    assert r.returncode != 0
    assert ("--horovod=elastic keeps the step alive when a task fails, but "
            "--kill-on-bad-exit=1") in r.stderr, r.stderr


@long_drill
def test_a_node_cut_off_entirely(cluster, torch_worker):
    node_cut_drill(cluster, torch_worker, "nodecut")


@long_drill
def test_keras_a_node_cut_off_entirely(cluster, keras_worker):
    node_cut_drill(cluster, keras_worker, "keras-nodecut")

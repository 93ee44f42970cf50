"""Elastic jobs without the cluster: ranks under tandem-run --elastic, which
runs the same membership service as srun --horovod=elastic
(docs/elastic.md), and --ranks-per-node 2 makes each pair of ranks a
"node", so that a failed rank's node is excluded as on a cluster.

workers/elastic_torch.py trains the same batch on every rank, so a run that
loses ranks and goes on from its last commit must end with the parameters
of a run without faults; its ElasticSampler ledger must show every sample
once per epoch outside rolled-back steps (workers/elastic_ledger.py).
Horovod's own unit tests of State and ElasticSampler
(test/single/test_torch_elastic.py) run against the shim, read from the
Horovod checkout at test time.
"""

import subprocess
import sys

import pytest

from conftest import WORKERS

sys.path.insert(0, str(WORKERS))
import elastic_ledger
import horovod_checkout

STEPS = 30
SAMPLES, BATCH = 96, 2
TOLERANCE = 1e-5  # averaging n equal float32 gradients is not exact (n=3: ~1e-6 after 40 momentum steps); a lost or doubled step moves ~1e-2


# The drills check the membership service and the engine, which do not
# depend on the framework: they run once, with Debian's interpreter (torch
# 1.13; the e2e drills use it too). Horovod's unit tests of TorchState and
# ElasticSampler run under every interpreter the suite runs with.
service_only = pytest.mark.skipif(
    sys.executable != "/usr/bin/python3",
    reason="checks the membership service, not the framework: run with /usr/bin/python3")


def elastic_run(build_dir, py_env, tmp_path, name, np, *worker_args, env=None, timeout=240,
                per_node=2):
    out = tmp_path / name
    out.mkdir()
    cmd = [str(build_dir / "tools" / "tandem-run"), "-np", str(np), "--elastic",
           "--ranks-per-node", str(per_node), "--timeout", str(timeout), sys.executable,
           str(WORKERS / "elastic_torch.py"), str(out), "--steps", str(STEPS),
           "--samples", str(SAMPLES), "--batch", str(BATCH)] + [str(a) for a in worker_args]
    run_env = dict(py_env, TANDEM_TIMEOUT="20", TANDEM_ELASTIC_PING_TIMEOUT="5",
                   **(env or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30, env=run_env)
    return r, out


@pytest.fixture(scope="module")
def reference(build_dir, py_env, runtime_api, tmp_path_factory):
    """The parameters of a run without faults (one rank: the data is the
    same on every rank, so the size does not change the result)."""
    r, out = elastic_run(build_dir, py_env, tmp_path_factory.mktemp("ref"), "ref", 1)
    assert r.returncode == 0, r.stdout + r.stderr
    return elastic_ledger.finals(out)[0]["params"]


def check_finished(r, out, reference, survivors, size):
    output = r.stdout + r.stderr
    assert r.returncode == 0, output[-4000:]
    done = elastic_ledger.finals(out)
    assert sorted(done) == survivors, output[-4000:]
    for start, f in done.items():
        assert f["size"] == size and f["steps"] == STEPS, (start, f)
        worst = elastic_ledger.max_difference(f["params"], reference)
        assert worst <= TOLERANCE, "start rank %d ends %g away from the unfaulted run" % (start, worst)
    assert elastic_ledger.check_ledger(str(out), SAMPLES, BATCH) >= 1
    return done


@service_only
def test_sigkill_of_a_rank_goes_on_from_the_last_commit(build_dir, py_env, tmp_path, reference):
    r, out = elastic_run(build_dir, py_env, tmp_path, "kill", 4, "--fault", "kill:3:13")
    done = check_finished(r, out, reference, [0, 1], 2)
    # Old ranks keep their numbers; the killed rank's "node" is excluded with
    # its other rank, which is told so (Horovod's blacklisting).
    assert {s: f["rank"] for s, f in done.items()} == {0: 0, 1: 1}
    assert "host1[0] has been removed from elastic job" in r.stdout + r.stderr
    assert "elastic job: 2 generations, the last of 2 ranks" in r.stderr


@service_only
def test_an_exception_in_rank_0_hands_rank_0_to_the_next_node(build_dir, py_env, tmp_path,
                                                              reference):
    r, out = elastic_run(build_dir, py_env, tmp_path, "raise", 4, "--fault", "raise:0:9")
    done = check_finished(r, out, reference, [2, 3], 2)
    assert {s: f["rank"] for s, f in done.items()} == {2: 0, 3: 1}
    assert "injected failure at step 9 on start rank 0" in r.stderr


@service_only
def test_below_the_minimum_size_the_job_fails_with_horovods_message(build_dir, py_env, tmp_path,
                                                                    runtime_api):
    r, out = elastic_run(build_dir, py_env, tmp_path, "min", 2, "--fault", "kill:1:7",
                         env={"TANDEM_ELASTIC_MIN_NP": "2", "HOROVOD_ELASTIC_TIMEOUT": "2"},
                         per_node=1)
    output = r.stdout + r.stderr
    assert r.returncode != 0, output[-4000:]
    assert ("Timed out waiting for minimum number of slots to become available. Please check "
            "that you have enough resources to run at least 2 Horovod processes.") in output
    assert not elastic_ledger.finals(out)


@service_only
def test_past_the_reset_limit_the_job_fails_with_horovods_message(build_dir, py_env, tmp_path,
                                                                  runtime_api):
    r, out = elastic_run(build_dir, py_env, tmp_path, "limit", 2, "--fault", "kill:1:7",
                         env={"TANDEM_ELASTIC_RESET_LIMIT": "0"}, per_node=1)
    output = r.stdout + r.stderr
    assert r.returncode != 0, output[-4000:]
    assert ("Horovod was shutdown because number of resets during elastic job exceeded "
            "limit: 0") in output


def horovod_file(path, dest):
    text = horovod_checkout.show(path)
    dest.write_text(text)
    return dest


def test_horovods_state_and_sampler_unit_tests(ranks, tmp_path):
    # test/single: one process, as Horovod runs it (its sampler asserts
    # count one replica).
    test = horovod_file("test/single/test_torch_elastic.py", tmp_path / "test_torch_elastic.py")
    r = ranks.run(1, "run_pytest.py", test, timeout=300)
    output = r.stdout + r.stderr
    assert r.returncode == 0, output[-4000:]
    assert "2 passed" in output, output[-4000:]

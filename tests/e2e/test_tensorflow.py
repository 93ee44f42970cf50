"""tandem.tensorflow and the horovod.tensorflow shim under `srun --horovod=on`
on the local cluster, 4 ranks on two nodes, with a TensorFlow interpreter
that has nothing of Tandem installed (the plugin preloads libtandem and puts
the packages on PYTHONPATH).

Each test runs once per ``--python`` interpreter that has tensorflow (the
conftest's ``tf_python``; contrib/test.sh passes the TF venv of
contrib/install-python-envs.sh); with none, they are reported skipped.
"""

import pathlib
import re

WORKERS = pathlib.Path(__file__).resolve().parents[1] / "python" / "workers"


def _check_names(worker):
    return re.findall(r"^@check\ndef (\w+)\(", (WORKERS / worker).read_text(), re.M)


def _srun(cluster, python, script, *args, nodes=2, tasks=4, timeout=900):
    return cluster.srun(f"-N{nodes}", f"-n{tasks}", "--horovod=on", python,
                        str(cluster.root / script), *[str(a) for a in args],
                        env={"TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=timeout)


def _all_checks_pass(r, names, ranks):
    out = r.stdout + r.stderr
    failures = re.findall(r"^.*FAIL .*$", r.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    passes = re.findall(r"^PASS (\w+) rank (\d+)$", r.stdout, re.M)
    for name in names:
        assert {int(k) for n, k in passes if n == name} == set(ranks), name + "\n" + out[-3000:]
    assert r.returncode == 0, out[-3000:]


def test_tf_api_checks_pass_on_every_rank(cluster, tf_python):
    names = _check_names("check_tf_api.py")
    assert len(names) >= 15, names
    r = _srun(cluster, tf_python, "tests/python/workers/check_tf_api.py")
    _all_checks_pass(r, names, range(4))


def test_tf_mechanism_checks_pass_on_every_rank(cluster, tf_python):
    names = _check_names("check_tf_mechanism.py")
    r = _srun(cluster, tf_python, "tests/python/workers/check_tf_mechanism.py")
    _all_checks_pass(r, names, range(4))


def test_unmodified_horovod_tf2_script_trains(cluster, tf_python):
    # examples/tensorflow2_synthetic_benchmark.py is a plain Horovod script
    # (import horovod.tensorflow as hvd, DistributedGradientTape in tf.function).
    r = _srun(cluster, tf_python, "examples/tensorflow2_synthetic_benchmark.py",
              "--num-iters", 2, "--num-batches-per-iter", 5)
    assert r.returncode == 0, r.stderr[-3000:]
    assert re.search(r"^Total img/sec on 4 rank\(s\): [0-9.]+$", r.stdout, re.M), r.stdout
    assert "Weights identical on every rank: True" in r.stdout, r.stdout


def test_four_ranks_on_two_nodes_equal_one_process(cluster, tf_python, tmp_path):
    # Tolerance and its justification: tests/python/tensorflow/test_tf_equivalence.py.
    import numpy as np
    one, four = tmp_path / "one", tmp_path / "four"
    one.mkdir()
    four.mkdir()
    worker = "tests/python/workers/check_tf_train.py"
    r = _srun(cluster, tf_python, worker, "--batch-size", 64, "--out", one, nodes=1, tasks=1)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _srun(cluster, tf_python, worker, "--batch-size", 16, "--out", four)
    assert r.returncode == 0, r.stderr[-3000:]

    def weights(path):
        with np.load(path) as f:
            return [f["arr_%d" % i] for i in range(len(f.files))]
    ranks = [weights(four / ("rank%d.npz" % k)) for k in range(4)]
    for k in range(1, 4):
        assert all(np.array_equal(a, b) for a, b in zip(ranks[k], ranks[0])), k
    ref = weights(one / "rank0.npz")
    worst = max(float(np.abs(a - b).max()) for a, b in zip(ranks[0], ref))
    assert worst <= 1e-5, worst


def test_mwms_twin_runs_from_the_slurm_layout(cluster, tf_python):
    # The benchmark's competitor builds TF_CONFIG from SLURM_* (two nodes,
    # block layout) and trains: the comparison is runnable under srun too.
    r = cluster.srun("-N2", "-n4", "--horovod=off", tf_python,
                     str(cluster.root / "contrib/bench/tf_mwms_synthetic_benchmark.py"),
                     "--num-iters", "1", "--num-batches-per-iter", "2",
                     "--num-warmup-batches", "1", "--setup-timeout", "400",
                     env={"TF_CPP_MIN_LOG_LEVEL": "2"},
                     timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"^Total img/sec on 4 rank\(s\): [0-9.]+$", r.stdout, re.M), r.stdout

"""tandem.keras (horovod.keras / horovod.tensorflow.keras on Keras 3) under
`srun --horovod=on` on the local cluster, 4 ranks on 2 nodes: every check of
tests/python/workers/check_keras.py on every rank, the Horovod-style example
training, and the torch backend.

Interpreters: the e2e conftest's ``tf_python`` (every ``--python``
interpreter with TensorFlow) parametrizes these tests. The torch-backend test
needs an interpreter with torch and Keras 3: the torch 2.x venv under
TANDEM_DEPS.
"""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "python" / "workers" / "check_keras.py"
DEPS = pathlib.Path(os.environ.get("TANDEM_DEPS", "/opt/tandem-deps"))


def _checks(backend, size=4):
    """The worker's checks for a backend, read from its source (this process
    need not import Keras): (name, backends, min_size)."""
    found = re.findall(r"^@check\((.*)\)\ndef (\w+)\(", WORKER.read_text(), re.M)
    out = []
    for args, name in found:
        backends = re.search(r"backends=\(([^)]*)\)", args)
        min_size = re.search(r"min_size=(\d+)", args)
        if backends and backend not in backends.group(1):
            continue
        if min_size and int(min_size.group(1)) > size:
            continue
        out.append(name)
    return out


@pytest.fixture
def keras_torch_python():
    path = DEPS / "torch2" / "bin" / "python"
    probe = "import torch, keras; assert keras.__version__.startswith('3.')"
    if not path.exists() or subprocess.run(
            [str(path), "-c", probe], capture_output=True,
            env=dict(os.environ, KERAS_BACKEND="torch")).returncode != 0:
        pytest.skip("no interpreter with torch and Keras 3 at %s" % path)
    return str(path)


def _srun(cluster, python, script, *args, env=None, timeout=600):
    return cluster.srun("-N2", "-n4", "--horovod=on", python, str(ROOT / script),
                        *[str(a) for a in args], env=env, timeout=timeout)


def _assert_every_check_passed(r, names):
    out = r.stdout + r.stderr
    failures = re.findall(r"^.*FAIL .*$", r.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    passes = re.findall(r"^PASS (\w+) rank (\d+)$", r.stdout, re.M)
    for name in names:
        assert {int(k) for n, k in passes if n == name} == {0, 1, 2, 3}, name + "\n" + out[-3000:]
    assert r.returncode == 0, out[-3000:]


def test_keras_checks_pass_on_every_rank(cluster, tf_python):
    names = _checks("tensorflow")
    assert len(names) >= 25, names
    r = _srun(cluster, tf_python, "tests/python/workers/check_keras.py",
              env={"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}, timeout=900)
    _assert_every_check_passed(r, names)
    assert re.search(r"^equivalence tensorflow run_eagerly=False: 4 x 4 vs 1 x 16", r.stdout,
                     re.M), r.stdout[-3000:]


def test_horovod_style_keras_example_trains(cluster, tf_python):
    # examples/tensorflow2_keras_mnist.py is written as a Horovod TF2 Keras
    # script (import horovod.tensorflow.keras as hvd, the callbacks,
    # experimental_run_tf_function=False); the averaged loss must fall.
    r = _srun(cluster, tf_python, "examples/tensorflow2_keras_mnist.py", "--epochs", 3,
              "--steps-per-epoch", 48, "--batch-size", 16, "--verbose", 0)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    losses = [float(x) for x in re.findall(r"^epoch \d+ loss ([0-9.]+)", r.stdout, re.M)]
    assert len(losses) == 3, r.stdout
    assert losses[-1] < 0.5 * losses[0], losses
    assert "finished gradual learning rate warmup" in r.stdout, r.stdout
    assert re.search(r"trained 36 steps on 4 ranks: [0-9.]+ images/sec", r.stdout), r.stdout


def test_keras_on_the_torch_backend(cluster, keras_torch_python):
    names = _checks("torch")
    r = _srun(cluster, keras_torch_python, "tests/python/workers/check_keras.py",
              env={"KERAS_BACKEND": "torch"})
    _assert_every_check_passed(r, names)
    assert re.search(r"^equivalence torch run_eagerly=False: 4 x 4 vs 1 x 16", r.stdout,
                     re.M), r.stdout[-3000:]

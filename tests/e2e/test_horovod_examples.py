"""Horovod's own TF2 and Keras examples, read from the Horovod checkout at
test time and not changed, under `srun -N2 -n2 --horovod=on` on the local
cluster: examples/tensorflow2/tensorflow2_mnist.py,
tensorflow2_keras_mnist.py, tensorflow2_synthetic_benchmark.py and
examples/keras/keras_mnist_advanced.py.

They run on Keras 2, where they were written (the conftest's
``keras2_python``: TF 2.21 with tf_keras and ``TF_USE_LEGACY_KERAS=1``, and
TF 2.15); ``tensorflow2_keras_mnist.py`` also on Keras 3 (``tf_python``),
where it needs no change. Each runs through workers/horovod_example.py, which
caps the steps the scripts have no flag for, lets Keras read the
MNIST-shaped file this test writes under the job's ``$HOME/.keras/datasets``
(this machine cannot download MNIST), and for the TF1 script
``keras_mnist_advanced.py`` binds ``tf.ConfigProto``/``tf.Session`` to
``tf.compat.v1`` (no TensorFlow 2 has them; Horovod's own build on TF 2.15
stops there too). What each script prints shows that it trained on both
ranks (its loss lines, the warmup message, the benchmark's img/sec).

The Horovod checkout is the clone named by ``TANDEM_HOROVOD_CHECKOUT``
(bare or not) at tag v0.28.1; without it the tests skip, saying so.
"""

import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "workers"))
from horovod_checkout import TAG, checkout

RUNNER = pathlib.Path(__file__).resolve().parent / "workers" / "horovod_example.py"


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """The examples folder of Horovod's checkout, extracted at test time."""
    clone = checkout()
    out = tmp_path_factory.mktemp("horovod")
    archive = subprocess.run(["git", "-C", clone, "archive", TAG, "examples"],
                             capture_output=True, timeout=120)
    if archive.returncode != 0:
        pytest.skip("git archive %s examples in %s failed: %s"
                    % (TAG, clone, archive.stderr.decode()[-300:]))
    subprocess.run(["tar", "x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "examples"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A HOME whose ~/.keras/datasets holds MNIST-shaped files (random
    digits; 28x28 uint8 images, labels 0-9): mnist.npz and the per-rank
    mnist-<rank>.npz the TF2 examples ask for."""
    home = tmp_path_factory.mktemp("home")
    folder = home / ".keras" / "datasets"
    folder.mkdir(parents=True)
    rng = np.random.RandomState(0)
    arrays = {"x_train": rng.randint(0, 256, (1024, 28, 28)).astype(np.uint8),
              "y_train": rng.randint(0, 10, 1024).astype(np.uint8),
              "x_test": rng.randint(0, 256, (256, 28, 28)).astype(np.uint8),
              "y_test": rng.randint(0, 10, 256).astype(np.uint8)}
    for name in ["mnist.npz"] + ["mnist-%d.npz" % r for r in range(2)]:
        np.savez(folder / name, **arrays)
    os.chmod(home, 0o755)
    return home


_TF_KERAS = {}


def has_tf_keras(python):
    """Whether Keras 2 is tf_keras here (TF 2.16+), which TensorFlow serves as
    tf.keras only with TF_USE_LEGACY_KERAS=1; on TF 2.15 keras is Keras 2."""
    if python not in _TF_KERAS:
        _TF_KERAS[python] = subprocess.run([python, "-c", "import tf_keras"],
                                           capture_output=True).returncode == 0
    return _TF_KERAS[python]


def run(cluster, python, home, script, *args, runner_args=(), keras2=False, timeout=600):
    workdir = pathlib.Path(tempfile.mkdtemp(prefix=script.stem + "-", dir=home))
    os.chmod(workdir, 0o755)
    env = {"HOME": str(home), "TF_CPP_MIN_LOG_LEVEL": "2"}
    if keras2 and has_tf_keras(python):
        env["TF_USE_LEGACY_KERAS"] = "1"
    r = cluster.srun("-N2", "-n2", "--horovod=on", "--chdir=%s" % workdir, python,
                     str(RUNNER), *runner_args, str(script), *[str(a) for a in args],
                     env=env, timeout=timeout)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert r.stdout.count("horovod_example: done") == 2, out[-4000:]
    return r, workdir


def test_tensorflow2_mnist(cluster, keras2_python, home, examples):
    r, workdir = run(cluster, keras2_python, home,
                     examples / "tensorflow2" / "tensorflow2_mnist.py",
                     runner_args=["--max-steps", "12"], keras2=True)
    losses = re.findall(r"^Step #(\d+)\tLoss: ([0-9.]+)$", r.stdout, re.M)
    assert [s for s, _ in losses] == ["0", "10"], r.stdout[-3000:]  # rank 0 only
    assert list(workdir.glob("checkpoints-1.index")), \
        "rank 0 wrote no checkpoint"


def _keras_mnist(cluster, python, home, examples, keras2):
    r, workdir = run(cluster, python, home,
                     examples / "tensorflow2" / "tensorflow2_keras_mnist.py",
                     runner_args=["--max-steps", "4", "--max-epochs", "3"], keras2=keras2)
    # The warmup callback's own message at its last epoch (3), on rank 0.
    assert re.search(r"Epoch 3: finished gradual learning rate warmup to 0\.002\.", r.stdout), \
        r.stdout[-3000:]
    assert list(workdir.glob("checkpoint-3.h5")), \
        "rank 0 wrote no checkpoint"


def test_tensorflow2_keras_mnist_on_keras2(cluster, keras2_python, home, examples):
    _keras_mnist(cluster, keras2_python, home, examples, True)


def test_tensorflow2_keras_mnist_on_keras3(cluster, tf_python, home, examples):
    _keras_mnist(cluster, tf_python, home, examples, False)


def test_tensorflow2_synthetic_benchmark(cluster, keras2_python, home, examples):
    r, _ = run(cluster, keras2_python, home,
               examples / "tensorflow2" / "tensorflow2_synthetic_benchmark.py",
               "--model", "MobileNet", "--batch-size", "4", "--num-warmup-batches", "1",
               "--num-batches-per-iter", "1", "--num-iters", "2", "--no-cuda", keras2=True)
    assert re.search(r"^Total img/sec on 2 CPU\(s\): [0-9.]+ \+-[0-9.]+$", r.stdout, re.M), \
        r.stdout[-3000:]


def test_keras_mnist_advanced(cluster, keras2_python, home, examples):
    runner_args = ["--tf1-names"] + (["--keras-is-tf-keras"] if has_tf_keras(keras2_python)
                                     else [])
    r, _ = run(cluster, keras2_python, home, examples / "keras" / "keras_mnist_advanced.py",
               "--epochs", "2", "--batch-size", "64", runner_args=runner_args, keras2=True)
    assert re.search(r"^Test accuracy: [0-9.]+$", r.stdout, re.M), r.stdout[-3000:]
    assert r.stdout.count("Test accuracy:") == 2, r.stdout[-3000:]

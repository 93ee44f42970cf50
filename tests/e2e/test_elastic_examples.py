"""Horovod's elastic examples and test mains, unchanged, under
srun --horovod=elastic: each file is read from the Horovod checkout at test
time (git show v0.28.1:PATH into a scratch folder), never copied into this
project. What they need that a network would bring is made here: MNIST in
torchvision's format (random images: the example is run, not judged on
accuracy).

Not run: the TF1 test mains (elastic_tensorflow_main.py,
elastic_tensorflow_keras_main.py: tf.Session), and the examples that
download MNIST through Keras (the file's hash is checked, so a made-up one
is refused); the TF2 ones call optimizer.lr in their reset callback, which
Keras 3 removed (docs/elastic.md), so they run here without a reset.
"""

import gzip  # noqa: F401 (torchvision reads the raw files uncompressed)
import json
import os
import pathlib
import signal
import struct
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "workers"))
import horovod_checkout

FAST = {"TANDEM_TIMEOUT": "6", "TANDEM_ELASTIC_PING_TIMEOUT": "3"}


def scratch(cluster, tag):
    d = cluster.dir / "e2e" / f"hvd-{tag}-{os.getpid()}-{time.monotonic_ns()}"
    d.mkdir(parents=True)
    d.chmod(0o777)
    return d


def horovod_file(path, dest_dir):
    text = horovod_checkout.show(path)
    dest = dest_dir / pathlib.Path(path).name
    dest.write_text(text)
    return dest


def env_for(d, extra=None):
    # HOME: the MNIST example takes a lock in ~ (~/.horovod_lock).
    return dict(FAST, TANDEM_ELASTIC_DIR=str(d / "services"), HOME=str(d), **(extra or {}))


def pid_of_task(script, procid):
    """The pid of the task running `script` whose SLURM_PROCID is procid."""
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if str(script).encode() not in (proc / "cmdline").read_bytes():
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SLURM_PROCID={procid}".encode() in env:
            return int(proc.name)
    return None


def write_mnist(root, count, prefix):
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(len(prefix))
    images = rng.integers(0, 256, size=(count, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=count, dtype=np.uint8)
    (raw / f"{prefix}-images-idx3-ubyte").write_bytes(
        struct.pack(">IIII", 0x803, count, 28, 28) + images.tobytes())
    (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x801, count) +
                                                     labels.tobytes())


def test_pytorch_mnist_elastic_example(cluster):
    d = scratch(cluster, "mnist")
    example = horovod_file("examples/elastic/pytorch/pytorch_mnist_elastic.py", d)
    write_mnist(d / "data", 512, "train")
    write_mnist(d / "data", 128, "t10k")
    r = cluster.srun("-N", "2", "-n", "2", "--horovod=elastic", "/usr/bin/python3", str(example),
                     "--epochs", "1", "--data-dir", str(d / "data"), env=env_for(d), timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Test set: Average loss" in out, out
    assert "elastic job: 1 generation, the last of 2 ranks; 2 processes finished" in out, out


def test_pytorch_synthetic_benchmark_elastic_survives_a_killed_rank(cluster):
    d = scratch(cluster, "bench")
    example = horovod_file("examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py", d)
    log = open(d / "srun.out", "w")
    proc = subprocess.Popen(
        ["srun", "--immediate=10", "-N", "3", "-n", "3", "--horovod=elastic", "/usr/bin/python3",
         str(example), "--no-cuda", "--model", "mobilenet_v3_small", "--batch-size", "4",
         "--num-warmup-batches", "2", "--num-batches-per-iter", "3", "--num-iters", "8"],
        stdout=log, stderr=subprocess.STDOUT, env=cluster._env(env_for(d)), cwd=d)
    try:
        deadline = time.monotonic() + 240
        while "Iter #1" not in (d / "srun.out").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, \
                (d / "srun.out").read_text()
            time.sleep(0.2)
        pid = pid_of_task(example, 2)
        assert pid, "task 2 not found"
        os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=240)
        out = (d / "srun.out").read_text()
        assert "Total img/sec on 2 CPU(s)" in out, out
        assert "the last of 2 ranks; 2 processes finished, 1 lost" in out, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def test_tensorflow2_synthetic_benchmark_elastic_example(cluster, tf_python):
    d = scratch(cluster, "tfbench")
    example = horovod_file(
        "examples/elastic/tensorflow2/tensorflow2_synthetic_benchmark_elastic.py", d)
    r = cluster.srun("-N", "2", "-n", "2", "--horovod=elastic", tf_python, str(example),
                     "--no-cuda", "--model", "MobileNetV3Small", "--batch-size", "2",
                     "--num-warmup-batches", "1", "--num-batches-per-iter", "1",
                     "--num-iters", "2", env=env_for(d), timeout=400)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "Total img/sec on 2 CPU(s)" in out, out


def test_horovods_elastic_tensorflow2_main(cluster, tf_python):
    """elastic_tensorflow2_main.py (TensorFlowKerasState, DistributedGradientTape
    in a tf.function) through its epochs; it imports psutil, which the TF
    environment lacks: Debian's (the same CPython 3.11 ABI) is put on the
    path for it."""
    d = scratch(cluster, "tf2main")
    main = horovod_file("test/integration/data/elastic_tensorflow2_main.py", d)
    (d / "site").mkdir()
    (d / "site" / "psutil").symlink_to("/usr/lib/python3/dist-packages/psutil")
    logfile = d / "log.txt"
    r = cluster.srun("-N", "2", "-n", "4", "--ntasks-per-node=2", "--horovod=elastic", tf_python,
                     str(main), "--logfile", str(logfile),
                     env=env_for(d, {"PYTHONPATH": f"{cluster.python_dir}:{d / 'site'}"}),
                     timeout=400)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    results = [json.loads(line) for line in logfile.read_text().splitlines()]
    assert [(x["epoch"], x["size"], x["rendezvous"]) for x in results] == \
        [(0, 4, 1), (1, 4, 1), (2, 4, 1)], out

"""tandem.torch and the horovod shim under `srun --horovod=on` on the local
cluster, with ranks on two nodes (the plugin preloads libtandem and puts the
package on PYTHONPATH; nothing else is set up for the job)."""

import pathlib
import re

PY = "/usr/bin/python3"
WORKER = pathlib.Path(__file__).resolve().parents[1] / "python" / "workers" / "check_api.py"
# The worker's checks, read from its source (this process need not import torch).
CHECKS = re.findall(r"^@check\ndef (\w+)\(", WORKER.read_text(), re.M)

def _srun_python(cluster, script, *args, nodes=2, tasks=4, timeout=300):
    return cluster.srun(f"-N{nodes}", f"-n{tasks}", "--horovod=on", PY,
                        str(cluster.root / script), *[str(a) for a in args],
                        timeout=timeout)

def test_api_checks_pass_on_every_rank(cluster):
    r = _srun_python(cluster, "tests/python/workers/check_api.py")
    out = r.stdout + r.stderr
    failures = re.findall(r"^.*FAIL .*$", r.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    passes = re.findall(r"^PASS (\w+) rank (\d+)$", r.stdout, re.M)
    assert len(CHECKS) >= 15
    for name in CHECKS:
        assert {int(k) for n, k in passes if n == name} == {0, 1, 2, 3}, name
    assert r.returncode == 0, out[-3000:]


def test_unmodified_horovod_script_trains(cluster):
    # examples/pytorch_mnist.py is a plain Horovod script (import horovod.torch
    # as hvd); the loss it prints must go down.
    r = _srun_python(cluster, "examples/pytorch_mnist.py", "--epochs", "1", "--steps", "60",
                     "--log-interval", "10")
    assert r.returncode == 0, r.stderr[-3000:]
    losses = [float(x) for x in re.findall(r"loss ([0-9.]+)", r.stdout)]
    assert len(losses) == 6, r.stdout
    assert losses[-1] < 0.5 * losses[0], losses
    assert re.search(r"trained 60 steps on 4 ranks: [0-9.]+ images/sec", r.stdout), r.stdout

def test_four_ranks_on_two_nodes_equal_one_process(cluster, tmp_path):
    steps, batch = 5, 16
    common = ["--steps", steps, "--dropout", 0, "--no-scale-lr", "--num-samples", 1024,
              "--log-interval", 1000, "--lr", 0.01]
    one, four = tmp_path / "one.pt", tmp_path / "four.pt"
    r = _srun_python(cluster, "examples/pytorch_mnist.py", "--batch-size", 4 * batch,
                     "--save", one, *common, nodes=1, tasks=1)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _srun_python(cluster, "examples/pytorch_mnist.py", "--batch-size", batch,
                     "--save", four, *common)
    assert r.returncode == 0, r.stderr[-3000:]
    import torch
    a, b = torch.load(one), torch.load(four)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    # Tolerance and its justification: tests/python/test_equivalence.py.
    assert worst <= 1e-5, worst


def test_cuda_tensors_are_refused_by_the_engine_on_every_rank(cluster):
    # No GPU on the cluster's nodes: every collective on a CUDA tensor fails
    # on all 4 ranks (2 nodes) with the engine's UnsupportedError and reason,
    # and the next CPU call of the same name works (workers/check_gpu.py).
    r = _srun_python(cluster, "tests/python/workers/check_gpu.py", "refusal")
    out = r.stdout + r.stderr
    failures = re.findall(r"^.*FAIL .*$", r.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + out[-3000:]
    names = re.findall(r'^@check\("refusal"\)\ndef (\w+)\(',
                       (WORKER.parent / "check_gpu.py").read_text(), re.M)
    assert len(names) == 3, names
    passes = re.findall(r"^PASS (\w+) rank (\d+)$", r.stdout, re.M)
    for name in names:
        assert {int(k) for n, k in passes if n == name} == {0, 1, 2, 3}, name + "\n" + out[-3000:]
    assert r.returncode == 0, out[-3000:]

"""Data parallelism changes nothing but the arithmetic order.

The MNIST example trained for a few steps on 4 ranks with a per-rank batch of
B must end with the parameters of one process trained with a batch of 4B:
DistributedSampler gives the 4 ranks exactly the 4B samples of the single
process's batch, each rank's loss is the mean over its B samples, and the
optimizer averages the 4 gradients, i.e. the mean over 4B.

Tolerance: 1e-5 absolute on every parameter (|p| ~ 0.01-0.3). The two runs
sum the same float32 products in a different order (4 partial means, then an
average, against one mean over 4B), which changes each gradient element by a
few units in the last place (~1e-7 relative); over 5 SGD steps with lr 0.01
that moves parameters by far less than 1e-6. A real fault is orders of
magnitude larger: one step moves parameters by ~lr * |grad| ~ 1e-3, so a
missing, doubled or unaveraged allreduce, or a shard/rank mix-up, exceeds
1e-5 at the first step.

Both sides run with torch's oneDNN kernels off (workers/without_onednn.py):
torch 2.x picks oneDNN for some float32 convolutions by batch size, and its
last-place differences flip near-ties in max_pool2d/ReLU of one side only
(2.5e-5 after 5 steps on torch 2.13, whatever the engine does).
"""

import subprocess
import sys

import torch

from conftest import ROOT, WORKERS

EXAMPLE = ROOT / "examples" / "pytorch_mnist.py"
WITHOUT_ONEDNN = WORKERS / "without_onednn.py"
STEPS, BATCH = 5, 16
COMMON = ["--steps", str(STEPS), "--dropout", "0", "--no-scale-lr", "--num-samples", "1024",
          "--log-interval", "1000", "--lr", "0.01"]
TOLERANCE = 1e-5


def test_four_ranks_of_b_equal_one_process_of_4b(ranks, py_env, tmp_path):
    one = tmp_path / "one.pt"
    r = subprocess.run([sys.executable, str(WITHOUT_ONEDNN), str(EXAMPLE),
                        "--batch-size", str(4 * BATCH),
                        "--save", str(one)] + COMMON, capture_output=True, text=True,
                       env=py_env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    four = tmp_path / "four.pt"
    r = ranks.run(4, WITHOUT_ONEDNN, EXAMPLE, "--batch-size", str(BATCH),
                  "--save", str(four), *COMMON)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    a, b = torch.load(one), torch.load(four)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= TOLERANCE, "4 x %d differs from 1 x %d by %g" % (BATCH, 4 * BATCH, worst)
    # The runs did train: an untouched model would also "match".
    sys.path.insert(0, str(EXAMPLE.parent))
    import pytorch_mnist
    torch.manual_seed(42)  # the example's initialisation, step by step
    pytorch_mnist.SyntheticMNIST(1024, 42)
    fresh = pytorch_mnist.Net(0.0).state_dict()
    moved = max((a[k] - fresh[k]).abs().max().item() for k in a)
    assert moved > 100 * TOLERANCE, "training moved parameters by only %g" % moved

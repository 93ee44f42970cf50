"""Runs a Python script with torch's oneDNN (mkldnn) CPU kernels switched off:

    python without_onednn.py SCRIPT [ARGS...]

For the equivalence tests (4 ranks x batch B against 1 process x batch 4B).
torch 2.x computes some float32 convolutions through oneDNN, depending on the
batch size; those results differ from the native kernels' by a few units in
the last place, which is enough to flip a near-tie in max_pool2d or ReLU of
the 4B run and move the parameters by ~1e-5 after 5 steps (measured on torch
2.13: 1 x 64 alone differs from a float64 reference by 2.5e-5, 4 x 16 by
2e-8; with oneDNN off both are within 2e-8). That is torch choosing kernels
per batch size, not data parallelism, so both sides of the comparison run
the same (native) kernels. torch 1.13 does the same with or without this.
"""

import os
import runpy
import sys

import torch

torch.backends.mkldnn.enabled = False
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
runpy.run_path(script, run_name="__main__")

"""One rank of a launcher test: prints one JSON line with what hvd says about
this rank and an allreduce of (rank + 1), so that the test checks placement
and the sum together. Any launcher: mpirun, srun, tandem-run."""

import json
import socket
import sys

import torch

import horovod.torch as hvd

hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
print(json.dumps({"rank": hvd.rank(), "size": hvd.size(), "local_rank": hvd.local_rank(),
                  "local_size": hvd.local_size(), "cross_rank": hvd.cross_rank(),
                  "host": socket.gethostname(), "sum": float(total[0])}), flush=True)
hvd.shutdown()
sys.exit(0)

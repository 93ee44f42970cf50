"""A rank of tests/python/test_torch_horovodrun.py: one allreduce of
rank + 1, its result and host on stdout and a line on stderr; with an argument N,
rank N kills itself after hvd.init() while the others wait in the
allreduce."""

import os
import signal
import socket
import sys

import torch

import horovod.torch as hvd

hvd.init()
if len(sys.argv) > 1 and hvd.rank() == int(sys.argv[1]):
    os.kill(os.getpid(), signal.SIGKILL)
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
print("rank %d of %d local %d/%d sum %g on %s" % (hvd.rank(), hvd.size(), hvd.local_rank(),
                                                 hvd.local_size(), total.item(),
                                                 socket.gethostname()))
print("stderr of rank %d" % hvd.rank(), file=sys.stderr)

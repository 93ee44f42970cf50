#!/usr/bin/python3
"""Synthetic training throughput with horovod.torch (images/sec per rank and
in total), as Horovod's pytorch_synthetic_benchmark.py measures it.
ddp_synthetic_benchmark.py runs the same model with torch
DistributedDataParallel over gloo for comparison.

    srun -N 2 -n 4 --horovod=on /usr/bin/python3 examples/pytorch_synthetic_benchmark.py
    tandem-run -np 2 /usr/bin/python3 examples/pytorch_synthetic_benchmark.py --model vgg
"""

import argparse
import os
import sys
import timeit

import torch
import torch.nn.functional as F

import horovod.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark_models import MODELS


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch synthetic benchmark (horovod.torch)")
    p.add_argument("--model", choices=sorted(MODELS), default="mnist")
    p.add_argument("--batch-size", type=int, default=32, help="per-rank batch size")
    p.add_argument("--num-warmup-batches", type=int, default=5)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--fp16-allreduce", action="store_true")
    return p.parse_args()


def main():
    args = parse_args()
    hvd.init()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = MODELS[args.model]()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, *model.input_shape)
    target = torch.randint(0, 10, (args.batch_size,))

    def step():
        optimizer.zero_grad()
        F.nll_loss(model(data), target).backward()
        optimizer.step()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    log("Model: %s, batch size %d per rank, %d ranks, %d thread(s) per rank" % (
        args.model, args.batch_size, hvd.size(), args.threads))
    timeit.timeit(step, number=args.num_warmup_batches)
    rates = []
    for i in range(args.num_iters):
        t = timeit.timeit(step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log("Iter #%d: %.1f img/sec per rank" % (i, rate))
        rates.append(rate)
    mean = torch.tensor(rates).mean()
    # Total = sum over ranks of each rank's own rate (slowest ranks count).
    total = hvd.allreduce(mean, op=hvd.Sum, name="rate").item()
    log("Img/sec per rank: %.1f" % (total / hvd.size()))
    log("Total img/sec on %d rank(s): %.1f" % (hvd.size(), total))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The synthetic benchmark with torch DistributedDataParallel over gloo: the
same models, batch and timing as pytorch_synthetic_benchmark.py, to compare.

Under srun --horovod=on (and torchrun) the rendezvous is torch's env://
default, from MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, which the plugin
sets. Elsewhere rank and size come from HOROVOD_RANK/HOROVOD_SIZE (tandem-run)
or SLURM_PROCID/SLURM_NTASKS, with MASTER_ADDR (default 127.0.0.1) and
MASTER_PORT (default 29512).

    srun -n 2 --horovod=on python examples/ddp_synthetic_benchmark.py --model vgg
    tandem-run -np 2 /usr/bin/python3 examples/ddp_synthetic_benchmark.py --model vgg
"""

import argparse
import os
import sys
import timeit

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark_models import MODELS


def identity():
    for rank, size in (("HOROVOD_RANK", "HOROVOD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                       ("RANK", "WORLD_SIZE")):
        if rank in os.environ and size in os.environ:
            return int(os.environ[rank]), int(os.environ[size])
    return 0, 1


def main():
    p = argparse.ArgumentParser(description="PyTorch synthetic benchmark (DDP over gloo)")
    p.add_argument("--model", choices=sorted(MODELS), default="mnist")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--num-warmup-batches", type=int, default=5)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()

    if all(k in os.environ for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")):
        dist.init_process_group("gloo")  # env://, as an unmodified DDP script does
        rank, size = dist.get_rank(), dist.get_world_size()
    else:
        rank, size = identity()
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29512")
        dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = DistributedDataParallel(MODELS[args.model]())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
    shape = model.module.input_shape
    data = torch.randn(args.batch_size, *shape)
    target = torch.randint(0, 10, (args.batch_size,))

    def step():
        optimizer.zero_grad()
        F.nll_loss(model(data), target).backward()
        optimizer.step()

    def log(text):
        if rank == 0:
            print(text, flush=True)

    log("Model: %s, batch size %d per rank, %d ranks, %d thread(s) per rank (DDP/gloo)" % (
        args.model, args.batch_size, size, args.threads))
    timeit.timeit(step, number=args.num_warmup_batches)
    rates = []
    for i in range(args.num_iters):
        t = timeit.timeit(step, number=args.num_batches_per_iter)
        rates.append(args.batch_size * args.num_batches_per_iter / t)
        log("Iter #%d: %.1f img/sec per rank" % (i, rates[-1]))
    total = torch.tensor(rates).mean()
    dist.all_reduce(total)
    log("Img/sec per rank: %.1f" % (total.item() / size))
    log("Total img/sec on %d rank(s): %.1f" % (size, total.item()))
    # The DDP model goes first, while the process group is still registered:
    # if its Reducer held the group's last reference, the group's destructor
    # would join gloo's workers holding the GIL, and torch 1.13 hung here
    # when a worker still had a tensor to release (it needs the GIL).
    del step, optimizer, model
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

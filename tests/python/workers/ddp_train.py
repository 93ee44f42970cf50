"""A plain torch DistributedDataParallel script, written as a DDP user writes
one for torchrun: ``init_process_group("gloo")`` with the default env://
rendezvous, ``LOCAL_RANK`` from the environment, DistributedSampler, DDP.
Nothing of Tandem or Horovod is imported. Under ``srun --horovod=on`` the
plugin gives it MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE (and GLOO_SOCKET_IFNAME).

Prints, per rank, ``DDP rank R/W local L/LW master ADDR:PORT job J step S at
T`` once joined (T: time.time()), rank 0 the loss per epoch (averaged over the ranks), and per
rank at the end ``DDP rank R done ...`` after checking that an all_reduce
gave the sum of what the ranks sent and that the parameters are bitwise
equal on every rank (``... done: ... at T``, after ``--linger`` seconds, just
before the process group is destroyed). Any failed check raises (exit status 1).

    srun -N 2 -n 4 --horovod=on python ddp_train.py --epochs 3
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--linger", type=float, default=0,
                   help="seconds to stay in the process group after training (tests of "
                        "concurrent steps)")
    args = p.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    print("DDP rank %d/%d local %d/%s master %s:%s job %s step %s at %.3f" % (
        rank, world, local_rank, os.environ["LOCAL_WORLD_SIZE"], os.environ["MASTER_ADDR"],
        os.environ["MASTER_PORT"], os.environ.get("SLURM_JOB_ID", "-"),
        os.environ.get("SLURM_STEP_ID", "-"), time.time()), flush=True)

    sent = torch.tensor([float(rank + 1)])
    dist.all_reduce(sent)
    assert sent.item() == world * (world + 1) / 2, (sent.item(), world)

    torch.set_num_threads(1)
    torch.manual_seed(0)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(20, 32), nn.ReLU(),
                                                  nn.Linear(32, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(512, 20, generator=g)
    y = (x @ torch.randn(20, 4, generator=g)).argmax(dim=1)
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)

    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        mean = torch.tensor([total / batches])
        dist.all_reduce(mean)
        losses.append(mean.item() / world)
        if rank == 0:
            print("epoch %d loss %.4f" % (epoch, losses[-1]), flush=True)

    flat = torch.cat([q.detach().flatten() for q in model.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(everyone, flat)
    for other, theirs in enumerate(everyone):
        assert torch.equal(theirs, flat), "parameters of rank %d differ from rank %d's" % (
            other, rank)
    time.sleep(args.linger)
    print("DDP rank %d done: loss %.4f -> %.4f, parameters equal on %d ranks at %.3f" % (
        rank, losses[0], losses[-1], world, time.time()), flush=True)
    # As examples/ddp_synthetic_benchmark.py: the model before the group, or
    # torch 1.13 can hang at exit joining gloo's workers with the GIL held.
    del optimizer, model
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The gloo side of contrib/bench/step.sh: the tensors of one training step
(float32 sum) reduced one by one with torch.distributed.all_reduce, as a
framework without fusion does. Prints the slowest rank's median and best
step time. Run with Debian's /usr/bin/python3 (it sees python3-torch):
    /usr/bin/python3 gloo_step.py -np 2 [-s 100] [-S 16K] [-l 10] [-L 4M] [--bind]
--bind pins rank r to one CPU, blocks of ranks per CPU (as tandem-run --bind
and mpirun --bind-to core do on a machine without GPUs)."""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1].upper(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def rank_main(rank, a, port, cpus):
    if a.bind:
        os.sched_setaffinity(0, {cpus[rank * len(cpus) // a.np]})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=a.np)
    sizes = [a.S] * a.s + [a.L] * a.l
    tensors = [torch.full((b // 4,), float(rank + 1)) for b in sizes]
    times = []
    for step in range(a.w + a.n):
        dist.barrier()
        t0 = time.perf_counter()
        for t in tensors:
            dist.all_reduce(t)
        if step >= a.w:
            times.append((time.perf_counter() - t0) * 1e6)
    expect = float(a.np * (a.np + 1) // 2) * a.np ** (a.w + a.n - 1)
    ok = torch.tensor([1 if abs(tensors[0][0].item() - expect) <= 1e-3 * expect else 0])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    slowest = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    s = sorted(slowest.tolist())
    if rank == 0:
        print("gloo-one-by-one np=%d tensors=%d bytes=%d median_us=%.1f best_us=%.1f check=%s"
              % (a.np, len(sizes), sum(sizes), s[len(s) // 2], s[0], "ok" if ok.item() else "FAIL"),
              flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-np", type=int, default=2)
    p.add_argument("-s", type=int, default=100)
    p.add_argument("-S", type=parse_size, default=16 << 10)
    p.add_argument("-l", type=int, default=10)
    p.add_argument("-L", type=parse_size, default=4 << 20)
    p.add_argument("-n", type=int, default=10)
    p.add_argument("-w", type=int, default=2)
    p.add_argument("--bind", action="store_true")
    a = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cpus = sorted(os.sched_getaffinity(0))
    mp.spawn(rank_main, args=(a, port, cpus), nprocs=a.np)


if __name__ == "__main__":
    main()

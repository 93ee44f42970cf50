#!/usr/bin/python3
"""The torch.distributed gloo side of contrib/bench/compare.sh: allreduce
(float32, sum, in place: gloo has no out-of-place form) over the same size
sweep as tandem-bench, same columns. Run with Debian's /usr/bin/python3,
which sees python3-torch:  /usr/bin/python3 gloo_allreduce.py -np 2

Under a launcher (contrib/bench/compare-nodes.sh: srun -N 2 -n 2), --launched
makes this process one rank: RANK and WORLD_SIZE from the environment, else
SLURM_PROCID and SLURM_NTASKS; MASTER_ADDR and MASTER_PORT (torch's env://)
name rank 0's rendezvous; GLOO_SOCKET_IFNAME picks the interface."""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1].upper(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def rank_main(rank, n, init_method, sizes):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=n)
    if rank == 0:
        print(f"# gloo-allreduce-bench: {n} ranks (torch {torch.__version__})")
        print("#%11s %12s %9s %8s %11s %12s %12s %6s" % ("size(B)", "count", "type", "redop", "time(us)",
                                                         "algbw(GB/s)", "busbw(GB/s)", "check"))
    for size in sizes:
        count = size // 4
        nbytes = count * 4
        base = (torch.arange(count, dtype=torch.int64) % 7).to(torch.float32)
        buf = base + (rank + 1)
        dist.all_reduce(buf)
        ok = torch.tensor([1 if torch.equal(buf, base * n + n * (n + 1) // 2) else 0])
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
        iters = max(5, min(1000, (1 << 30) // max(nbytes, 1)))
        for _ in range(max(2, iters // 10)):
            dist.all_reduce(buf)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        t = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if rank == 0:
            algbw = nbytes / t.item() / 1e9
            print("%12d %12d %9s %8s %11.2f %12.3f %12.3f %6s" % (nbytes, count, "float32", "sum", t.item() * 1e6,
                  algbw, algbw * 2 * (n - 1) / n, "ok" if ok.item() else "FAIL"), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-np", type=int, default=2)
    p.add_argument("-b", default="8")
    p.add_argument("-e", default="256M")
    p.add_argument("-f", type=float, default=4)
    p.add_argument("--launched", action="store_true",
                   help="this process is one rank of a launcher's job (see above)")
    a = p.parse_args()
    sizes, s = [], float(parse_size(a.b))
    while s <= parse_size(a.e) * 1.0001:
        sizes.append(int(s))
        s *= a.f
    if a.launched:
        env = os.environ
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if v not in env]
        rank = env.get("RANK", env.get("SLURM_PROCID"))
        size = env.get("WORLD_SIZE", env.get("SLURM_NTASKS"))
        if missing or rank is None or size is None:
            sys.exit("gloo_allreduce.py --launched needs MASTER_ADDR, MASTER_PORT and RANK/WORLD_SIZE "
                     "(or SLURM_PROCID/SLURM_NTASKS); missing: " +
                     " ".join(missing + [v for v, x in (("RANK", rank), ("WORLD_SIZE", size)) if x is None]))
        rank_main(int(rank), int(size), "env://", sizes)
        return 0
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mp.spawn(rank_main, args=(a.np, f"tcp://127.0.0.1:{port}", sizes), nprocs=a.np, join=True)


if __name__ == "__main__":
    sys.exit(main())

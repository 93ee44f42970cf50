"""hvd.init() -> hvd.shutdown() -> hvd.init() in one process, many times,
with collectives in each cycle (Horovod allows it; docs/runtime.md). Run under
tandem-run by tests/python/test_torch_reinit.py and under srun --horovod=on by
tests/e2e/test_reinit.py.

    reinit.py [cycles]      default 50

Prints "reinit ok rank R cycles N" at the end, "reinit FAIL ..." and exits 1
on the first wrong answer.
"""

import sys

import torch

import horovod.torch as hvd


def fail(cycle, what):
    print("reinit FAIL cycle %d: %s" % (cycle, what), flush=True)
    sys.exit(1)


def main():
    cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    rank = None
    for cycle in range(cycles):
        if hvd.is_initialized():
            fail(cycle, "is_initialized() is true before init()")
        hvd.init()
        if not hvd.is_initialized():
            fail(cycle, "is_initialized() is false after init()")
        if rank is None:
            rank, size = hvd.rank(), hvd.size()
        if (hvd.rank(), hvd.size()) != (rank, size):
            fail(cycle, "identity changed: %d/%d" % (hvd.rank(), hvd.size()))
        # The same names every cycle: the new engine has nothing of the old one.
        total = hvd.allreduce(torch.full((7,), float(rank + cycle)), op=hvd.Sum, name="reinit.sum")
        expect = size * (size - 1) / 2 + size * cycle
        if total.tolist() != [expect] * 7:
            fail(cycle, "allreduce gave %s, expected %s" % (total.tolist(), expect))
        hvd.barrier()
        gathered = hvd.allgather(torch.tensor([[rank, cycle]]), name="reinit.gather")
        if gathered.tolist() != [[r, cycle] for r in range(size)]:
            fail(cycle, "allgather gave %s" % gathered.tolist())
        hvd.shutdown()
    if hvd.is_initialized():
        fail(cycles, "is_initialized() is true after the last shutdown()")
    print("reinit ok rank %d cycles %d" % (rank, cycles), flush=True)


if __name__ == "__main__":
    main()

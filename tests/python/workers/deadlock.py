"""Diverged ranks through horovod.torch (issue 11): rank 0 waits in
hvd.barrier(), rank 1 in hvd.allgather(name='x'), any others in an
allreduce whose automatic name drifted (one call more). Every rank must
raise tandem.errors.AbortedError (a TandemError, hence a RuntimeError) whose
message names each rank's wait, the next call must raise too, and after
hvd.shutdown(); hvd.init() the job works again. Then the opposite: rank 0
is slow (sleeps before its allreduce) while the others wait: no error.

    deadlock.py             (run by tests/python/test_deadlock.py and
                             tests/e2e/test_deadlock.py)

Prints "deadlock PASS <check> rank R" per check, "deadlock FAIL ..." and
exits 1 on the first failure.
"""

import sys
import time

import torch

import horovod.torch as hvd
from tandem import errors


def fail(what):
    print("deadlock FAIL rank %d: %s" % (hvd.rank(), what), flush=True)
    sys.exit(1)


def diverged(rank, size):
    t = torch.ones(3)
    try:
        if rank == 0:
            hvd.barrier()
        elif rank == 1:
            hvd.allgather(t, name="x")
        else:
            hvd.allreduce(t)  # automatic name
            hvd.allreduce(t)  # one call more than ranks 0 and 1 made: drifted
        fail("the diverged collective returned")
    except errors.TandemError as exc:
        message = str(exc)
        if not isinstance(exc, errors.AbortedError) or not isinstance(exc, RuntimeError):
            fail("raised %s, expected AbortedError: %s" % (type(exc).__name__, message))
    for part in ["deadlock", "rank 0 waits in barrier", "rank 1 waits in allgather 'x'"]:
        if part not in message:
            fail("the message lacks %r: %s" % (part, message))
    for r in range(2, size):
        if "rank %d waits in allreduce" % r not in message:
            fail("the message lacks rank %d's wait: %s" % (r, message))
    print("deadlock message rank %d: %s" % (rank, message), flush=True)
    try:
        hvd.allreduce(t, name="after")
        fail("a collective after the deadlock succeeded")
    except errors.AbortedError:
        pass
    print("deadlock PASS diverged rank %d" % rank, flush=True)


def init_again(rank, size):
    hvd.shutdown()
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum, name="again")
    if total.item() != size * (size - 1) / 2:
        fail("allreduce after init again gave %s" % total.item())
    print("deadlock PASS init_again rank %d" % rank, flush=True)


def slow_rank(rank, size):
    # Rank 0 is busy (a checkpoint) for several deadlock check times.
    if rank == 0:
        time.sleep(4)
    handle = hvd.allreduce_async(torch.tensor([1.0]), op=hvd.Sum, name="slow")
    total = hvd.synchronize(handle)
    if total.item() != size:
        fail("allreduce with a slow rank gave %s" % total.item())
    print("deadlock PASS slow_rank rank %d" % rank, flush=True)


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if size < 2:
        fail("needs at least 2 ranks")
    diverged(rank, size)
    init_again(rank, size)
    slow_rank(rank, size)
    hvd.shutdown()


if __name__ == "__main__":
    main()

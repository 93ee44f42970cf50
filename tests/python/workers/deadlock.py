"""Diverged ranks through horovod.torch or horovod.tensorflow (docs/runtime.md):
rank 0 waits in hvd.barrier(), rank 1 in hvd.allgather(name='x'), any
others in an allreduce whose automatic name drifted (one call more). Every
rank must raise tandem.errors.AbortedError whose message names each rank's
wait, the next call must raise too, and after hvd.shutdown(); hvd.init()
the job works again. The error is caught as a Horovod user catches engine
failures (the elastic idiom): `except HorovodInternalError`, from
horovod.common.exceptions (and hvd.HorovodInternalError in horovod.torch,
where Horovod has it). Then the opposite: rank 0 is slow (sleeps before its
allreduce) while the others wait: no error.

    deadlock.py [torch|tensorflow]   (default torch; run by
                                      tests/python/test_torch_deadlock.py,
                                      tests/python/tensorflow/test_tf_deadlock.py
                                      and tests/e2e/test_deadlock.py)

Prints "deadlock PASS <check> rank R" per check, "deadlock FAIL ..." and
exits 1 on the first failure.
"""

import sys
import time

from horovod.common.exceptions import HorovodInternalError
from tandem import errors

FRONTEND = sys.argv[1] if len(sys.argv) > 1 else "torch"
if FRONTEND == "torch":
    import torch

    import horovod.torch as hvd

    def ones(n):
        return torch.ones(n)

    def scalar(value):
        return torch.tensor([float(value)])

    def item(tensor):
        return tensor.item()
elif FRONTEND == "tensorflow":
    import tensorflow as tf

    import horovod.tensorflow as hvd

    def ones(n):
        return tf.ones([n])

    def scalar(value):
        return tf.constant([float(value)])

    def item(tensor):
        return float(tensor.numpy()[0])
else:
    sys.exit("deadlock.py: unknown frontend %r (torch or tensorflow)" % FRONTEND)


def fail(what):
    print("deadlock FAIL rank %d: %s" % (hvd.rank(), what), flush=True)
    sys.exit(1)


def diverged(rank, size):
    t = ones(3)
    try:
        if rank == 0:
            hvd.barrier()
        elif rank == 1:
            hvd.allgather(t, name="x")
        else:
            hvd.allreduce(t)  # automatic name
            hvd.allreduce(t)  # one call more than ranks 0 and 1 made: drifted
        fail("the diverged collective returned")
    except HorovodInternalError as exc:  # the elastic idiom's catch
        message = str(exc)
        if not isinstance(exc, errors.AbortedError) or not isinstance(exc, RuntimeError):
            fail("raised %s, expected AbortedError: %s" % (type(exc).__name__, message))
        if FRONTEND == "torch" and not isinstance(exc, hvd.HorovodInternalError):
            fail("%s is not hvd.HorovodInternalError" % type(exc).__name__)
    # horovod.torch names a collective "<kind>.<name>" (Horovod's GetOpName);
    # horovod.tensorflow uses the name as given.
    gathered = "allgather.x" if FRONTEND == "torch" else "x"
    for part in ["deadlock", "rank 0 waits in barrier", "rank 1 waits in allgather '%s'" % gathered]:
        if part not in message:
            fail("the message lacks %r: %s" % (part, message))
    for r in range(2, size):
        if "rank %d waits in allreduce" % r not in message:
            fail("the message lacks rank %d's wait: %s" % (r, message))
    print("deadlock message rank %d: %s" % (rank, message), flush=True)
    try:
        hvd.allreduce(t, name="after")
        fail("a collective after the deadlock succeeded")
    except HorovodInternalError as exc:
        if not isinstance(exc, errors.AbortedError):
            fail("after the deadlock: %s, expected AbortedError: %s" % (type(exc).__name__, exc))
    print("deadlock PASS diverged rank %d" % rank, flush=True)


def init_again(rank, size):
    hvd.shutdown()
    hvd.init()
    total = hvd.allreduce(scalar(rank), op=hvd.Sum, name="again")
    if item(total) != size * (size - 1) / 2:
        fail("allreduce after init again gave %s" % item(total))
    print("deadlock PASS init_again rank %d" % rank, flush=True)


def slow_rank(rank, size):
    # Rank 0 is busy (a checkpoint) for several deadlock check times.
    if rank == 0:
        time.sleep(4)
    if FRONTEND == "torch":
        total = hvd.synchronize(hvd.allreduce_async(scalar(1), op=hvd.Sum, name="slow"))
    else:
        total = hvd.allreduce(scalar(1), op=hvd.Sum, name="slow")
    if item(total) != size:
        fail("allreduce with a slow rank gave %s" % item(total))
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

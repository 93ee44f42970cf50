"""A training-like loop for the step-end drills (tests/e2e/test_step_end.py):
every rank allreduces a 1 MiB gradient again and again until the engine
fails, then lets the error end the script as a user's would (an uncaught
exception: traceback, exit status 1).

    train_until_failure.py DIR

Writes DIR/rank<R>.pid (its pid, so the test can stop or kill it) once it
has run a few steps, and prints one line when the engine fails.
"""

import os
import sys
import time

import torch

import horovod.torch as hvd


def main():
    out = sys.argv[1]
    hvd.init()
    rank = hvd.rank()
    grad = torch.ones(256 * 1024)
    step = 0
    while True:
        try:
            hvd.allreduce(grad, name="grad")
        except Exception as exc:
            print("rank %d failed at step %d after %.3f s: %s: %s" % (
                rank, step, time.time(), type(exc).__name__, str(exc)[:300]), flush=True)
            raise
        step += 1
        if step == 5:
            with open(os.path.join(out, "rank%d.pid.tmp" % rank), "w") as f:
                f.write("%d\n" % os.getpid())
            os.rename(os.path.join(out, "rank%d.pid.tmp" % rank),
                      os.path.join(out, "rank%d.pid" % rank))
        time.sleep(0.005)


if __name__ == "__main__":
    main()

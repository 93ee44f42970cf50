"""A script that calls horovod.run as a user's would, with its functions in
__main__: argv[1] picks the case, the results (or the error) go to stdout as
one JSON line."""

import json
import sys

import horovod


def identity(offset):
    import torch

    import horovod.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank() + offset)]), op=hvd.Sum)
    return {"rank": hvd.rank(), "size": hvd.size(), "sum": float(total[0])}


def fails_on_one():
    import horovod.torch as hvd
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank one gives up")
    return hvd.rank()


case = sys.argv[1]
try:
    if case == "identity":
        out = horovod.run(identity, args=(10,), num_proc=3, hosts="localhost:3")
    elif case == "lambda":
        out = horovod.run(lambda a, b=0: a * b, args=(6,), kwargs={"b": 7}, np=2)
    elif case == "fails":
        out = horovod.run(fails_on_one, num_proc=2)
    else:
        out = horovod.run(identity, args=(0,), num_proc=2, hosts=case)
    print(json.dumps({"results": out}))
except Exception as e:  # noqa: BLE001 - the test reads the error's type and message
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))

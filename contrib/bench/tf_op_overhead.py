#!/usr/bin/env python3
"""What the TensorFlow binding costs on top of the engine: one allreduce of a
float32 tensor, median time per call over --reps calls, for
  core   tandem._arrays on a numpy array (the engine through ctypes, no TF),
  eager  hvd.allreduce on an eager tensor (DLPack in and out),
  graph  hvd.allreduce inside tf.function (one tf.numpy_function op),
  graph x N  N tensors, each its own collective, in one tf.function,
  grouped    the same N in one hvd.grouped_allreduce (one op, one engine call),
at a few sizes; wall time (median) and the CPU time of the process (mean,
the engine's thread included: robust to a loaded machine). Run on 2 ranks:

    tandem-run -np 2 /opt/tandem-deps/tf/bin/python contrib/bench/tf_op_overhead.py
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from tandem import _arrays


def median_us(fn, reps):
    """(median wall us, mean CPU us of this process, engine thread included)."""
    for _ in range(3):
        fn()
    times, cpu = [], 0.0
    for _ in range(reps):
        hvd.barrier()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu += time.process_time() - start_cpu
    return 1e6 * float(np.median(times)), 1e6 * cpu / reps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--sizes", default="1,4096,4194304", help="float32 elements")
    p.add_argument("--group", type=int, default=16)
    args = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    hvd.init()
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        reps = max(10, args.reps if n < 1 << 20 else args.reps // 10)
        array = np.ones(n, np.float32)
        tensor = tf.ones([n])
        graph = tf.function(lambda t: hvd.allreduce(t, op=hvd.Sum, name="g"), autograph=False)
        many = [tf.ones([max(1, n // args.group)]) for _ in range(args.group)]
        separate = tf.function(lambda *ts: [hvd.allreduce(t, op=hvd.Sum) for t in ts],
                               autograph=False)
        grouped = tf.function(lambda *ts: hvd.grouped_allreduce(list(ts), op=hvd.Sum),
                              autograph=False)
        core = median_us(lambda: _arrays.start_allreduce("c", array, hvd.Sum).wait(), reps)
        eager = median_us(lambda: hvd.allreduce(tensor, op=hvd.Sum, name="e"), reps)
        in_graph = median_us(lambda: graph(tensor), reps)
        sep = median_us(lambda: separate(*many), reps)
        grp = median_us(lambda: grouped(*many), reps)
        rows.append((n * 4, core, eager, in_graph, sep, grp))
    if hvd.rank() == 0:
        print("ranks %d, median us per call, load %s" % (hvd.size(), open("/proc/loadavg").read().split()[:3]))
        print("wall (median) / CPU of this process (mean), us per call")
        print("%10s %13s %13s %13s %15s %15s" % ("bytes", "core", "eager", "graph",
                                                 "graph x%d" % args.group,
                                                 "grouped x%d" % args.group))
        for bytes_, *cells in rows:
            print("%10d " % bytes_ + " ".join(
                "%*s" % (15 if i > 2 else 13, "%.0f / %.0f" % c) for i, c in enumerate(cells)))
    hvd.shutdown()


if __name__ == "__main__":
    main()

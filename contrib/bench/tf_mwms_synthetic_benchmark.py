#!/usr/bin/env python3
"""The twin of examples/tensorflow2_synthetic_benchmark.py on TensorFlow's own
MultiWorkerMirroredStrategy (CPU: collective ops over gRPC, ring
implementation): same model, same per-rank batch, same step (GradientTape in
tf.function, Keras SGD), same timing and the same "total img/sec" (the sum of
every rank's own rate).

TF_CONFIG is built from the layout the ranks were started with, unless it is
already set:
* under tandem-run: TANDEM_RANK/TANDEM_SIZE, every worker on 127.0.0.1;
* under srun: SLURM_PROCID/SLURM_NTASKS and the step's nodes
  (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE; block distribution).
Worker r listens on port --port + r.

    tandem-run -np 2 /opt/tandem-deps/tf/bin/python contrib/bench/tf_mwms_synthetic_benchmark.py
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import timeit

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))


def _slurm_hosts(size):
    nodes = subprocess.run(["scontrol", "show", "hostnames", os.environ["SLURM_STEP_NODELIST"]],
                           capture_output=True, text=True, check=True).stdout.split()
    counts = []
    for part in os.environ["SLURM_STEP_TASKS_PER_NODE"].split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part)
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    # gRPC needs an address: a node's NodeAddr (its name when not set; the
    # local cluster's node names resolve nowhere).
    addrs = {}
    for node in set(nodes):
        info = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True,
                              text=True, check=True).stdout
        m = re.search(r"\bNodeAddr=(\S+)", info)
        addrs[node] = m.group(1) if m else node
    hosts = [addrs[node] for node, count in zip(nodes, counts) for _ in range(count)]
    if len(hosts) != size:
        raise SystemExit("tf_mwms: %d tasks in SLURM_STEP_TASKS_PER_NODE, %d in the step"
                         % (len(hosts), size))
    return hosts


def tf_config(port):
    if "TF_CONFIG" in os.environ:
        return json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    if "TANDEM_RANK" in os.environ:
        rank, size = int(os.environ["TANDEM_RANK"]), int(os.environ["TANDEM_SIZE"])
        hosts = ["127.0.0.1"] * size
    elif "SLURM_PROCID" in os.environ:
        rank, size = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
        hosts = _slurm_hosts(size)
    else:
        rank, hosts = 0, ["127.0.0.1"]
    workers = ["%s:%d" % (h, port + r) for r, h in enumerate(hosts)]
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers},
                                          "task": {"type": "worker", "index": rank}})
    return rank


def main():
    p = argparse.ArgumentParser(description="TF2 synthetic benchmark on "
                                            "MultiWorkerMirroredStrategy")
    p.add_argument("--model", default="mnist")
    p.add_argument("--batch-size", type=int, default=32, help="per-rank batch size")
    p.add_argument("--num-warmup-batches", type=int, default=5)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="TensorFlow threads per rank")
    p.add_argument("--port", type=int, default=int(os.environ.get("TF_MWMS_PORT", "23456")))
    p.add_argument("--setup-timeout", type=int, default=300,
                   help="seconds to connect and run the first step")
    args = p.parse_args()
    rank = tf_config(args.port)
    # MultiWorkerMirroredStrategy waits for every worker without a deadline:
    # give up, saying so, when the first step has not run in time.
    watchdog = threading.Timer(args.setup_timeout, lambda: (
        print("tf_mwms: rank %d: workers not connected after %ds (TF_CONFIG=%s)"
              % (rank, args.setup_timeout, os.environ["TF_CONFIG"]), file=sys.stderr,
              flush=True), os._exit(3)))
    watchdog.daemon = True
    watchdog.start()

    import numpy as np
    import tensorflow as tf
    import keras
    from tf_benchmark_models import build_model

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    options = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    workers = strategy.num_replicas_in_sync
    with strategy.scope():
        model = build_model(args.model, seed=0)  # same start everywhere: no broadcast
        opt = keras.optimizers.SGD(0.01 * workers)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="sum_over_batch_size")
    shape = model.input_shape[1:]
    data = tf.random.uniform((args.batch_size,) + shape)
    target = tf.random.uniform((args.batch_size,), maxval=10, dtype=tf.int64)

    @tf.function
    def train_step():
        def step_fn():
            with tf.GradientTape() as tape:
                # The strategy sums gradients over replicas: scale for a mean.
                loss = loss_fn(target, model(data, training=True)) / workers
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.run(step_fn)

    def log(text):
        if rank == 0:
            print(text, flush=True)

    log("Model: %s, batch size %d per rank, %d workers (MultiWorkerMirroredStrategy, RING), "
        "%d thread(s) per rank" % (args.model, args.batch_size, workers, args.threads))
    train_step()
    watchdog.cancel()
    timeit.timeit(train_step, number=args.num_warmup_batches)
    rates = []
    cpu = time.process_time()
    for i in range(args.num_iters):
        t = timeit.timeit(train_step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log("Iter #%d: %.1f img/sec per rank" % (i, rate))
        rates.append(rate)
    cpu_ms = 1e3 * (time.process_time() - cpu) / (args.num_iters * args.num_batches_per_iter)
    mine = tf.constant([float(np.mean(rates)), cpu_ms])
    total, cpu_sum = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: mine),
                                     axis=None).numpy().tolist()
    log("Img/sec per rank: %.1f" % (total / workers))
    log("Total img/sec on %d rank(s): %.1f" % (workers, total))
    log("CPU ms per step per rank: %.2f" % (cpu_sum / workers))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic training throughput with horovod.tensorflow and a GradientTape
loop in tf.function (images/sec per rank and in total), as Horovod's
tensorflow2_synthetic_benchmark.py measures it. contrib/bench/
tf_mwms_synthetic_benchmark.py runs the same model with TensorFlow's own
MultiWorkerMirroredStrategy for comparison.

    srun -N 2 -n 4 --horovod=on /opt/tandem-deps/tf/bin/python examples/tensorflow2_synthetic_benchmark.py
    tandem-run -np 2 /opt/tandem-deps/tf/bin/python examples/tensorflow2_synthetic_benchmark.py --model vgg
"""

import argparse
import os
import sys
import time
import timeit

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

import horovod.tensorflow as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_benchmark_models import MODELS, build_model


def parse_args():
    p = argparse.ArgumentParser(description="TensorFlow 2 synthetic benchmark "
                                            "(horovod.tensorflow, GradientTape)")
    p.add_argument("--model", choices=sorted(MODELS), default="mnist")
    p.add_argument("--batch-size", type=int, default=32, help="per-rank batch size")
    p.add_argument("--num-warmup-batches", type=int, default=5)
    p.add_argument("--num-batches-per-iter", type=int, default=10)
    p.add_argument("--num-iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="TensorFlow threads per rank")
    p.add_argument("--fp16-allreduce", action="store_true")
    return p.parse_args()


def main():
    args = parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    hvd.init()

    model = build_model(args.model, seed=hvd.rank())  # rank 0's weights win below
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = keras.optimizers.SGD(0.01 * hvd.size())
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none

    shape = model.input_shape[1:]
    data = tf.random.uniform((args.batch_size,) + shape)
    target = tf.random.uniform((args.batch_size,), maxval=10, dtype=tf.int64)

    @tf.function
    def train_step(first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model(data, training=True))
        # Horovod: the tape averages the gradients over the ranks.
        tape = hvd.DistributedGradientTape(tape, compression=compression)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        # Horovod: start from rank 0's weights and optimizer state, after the
        # first step has created the optimizer's variables.
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(opt.variables, root_rank=0)
        return loss

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    log("Model: %s, batch size %d per rank, %d ranks, %d thread(s) per rank" % (
        args.model, args.batch_size, hvd.size(), args.threads))
    train_step(True)
    timeit.timeit(lambda: train_step(False), number=args.num_warmup_batches)
    rates = []
    cpu = time.process_time()
    for i in range(args.num_iters):
        t = timeit.timeit(lambda: train_step(False), number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log("Iter #%d: %.1f img/sec per rank" % (i, rate))
        rates.append(rate)
    # CPU time of this process per step (all its threads): what a step costs
    # the machine, which a loaded machine's waiting does not inflate.
    cpu_ms = 1e3 * (time.process_time() - cpu) / (args.num_iters * args.num_batches_per_iter)
    # Total = sum over ranks of each rank's own rate (slowest ranks count).
    total, cpu_sum = hvd.allreduce(tf.constant([np.mean(rates), cpu_ms]), op=hvd.Sum,
                                   name="rate").numpy().tolist()
    log("Img/sec per rank: %.1f" % (total / hvd.size()))
    log("Total img/sec on %d rank(s): %.1f" % (hvd.size(), total))
    log("CPU ms per step per rank: %.2f" % (cpu_sum / hvd.size()))
    weights = hvd.allgather_object([w.numpy() for w in model.weights])
    same = all(all(np.array_equal(a, b) for a, b in zip(w, weights[0])) for w in weights)
    log("Weights identical on every rank: %s" % same)


if __name__ == "__main__":
    main()

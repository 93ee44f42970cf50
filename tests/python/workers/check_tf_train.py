"""A GradientTape training loop in tf.function with horovod.tensorflow, on a
fixed data set: every step's global batch of size*B samples is split into
one slice of B per rank. With one process and --batch-size 4B it trains on
exactly the samples 4 ranks of B train on together, so the two must end
with the same weights up to float32 round-off (test_tf_equivalence.py).

Each rank starts from different weights (seeded by its rank) so that
broadcast_variables is what makes them equal; each writes its final weights
to <out>/rank<N>.npz, and rank 0 also the initial weights it broadcast.

    tandem-run -np 4 python check_tf_train.py --batch-size 16 --out DIR
    python check_tf_train.py --batch-size 64 --out DIR
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
import keras

import horovod.tensorflow as hvd

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "examples")
sys.path.insert(0, EXAMPLES)
from tf_benchmark_models import build_model  # noqa: E402


def dataset(samples, seed=7):
    g = np.random.default_rng(seed)
    images = g.standard_normal((samples, 28, 28, 1)).astype(np.float32)
    labels = g.integers(0, 10, samples).astype(np.int64)
    return images, labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, required=True, help="per rank")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    global_batch = args.batch_size * size
    images, labels = dataset(global_batch * args.steps)

    model = build_model("mnist", seed=1000 + rank)
    start = [w.numpy() for w in model.weights]
    hvd.broadcast_variables(model.variables, root_rank=0)
    opt = keras.optimizers.SGD(args.lr, momentum=args.momentum)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for step in range(args.steps):
        first = step * global_batch + rank * args.batch_size
        part = slice(first, first + args.batch_size)
        loss = train_step(tf.constant(images[part]), tf.constant(labels[part]))
        if rank == 0:
            print("step %d loss %.6f" % (step, float(loss)), flush=True)
    np.savez(os.path.join(args.out, "rank%d.npz" % rank),
             *[w.numpy() for w in model.weights])
    if rank == 0:
        np.savez(os.path.join(args.out, "initial.npz"), *start)
    hvd.shutdown()


if __name__ == "__main__":
    main()

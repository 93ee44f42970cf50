#!/usr/bin/env python3
"""A convolutional MNIST classifier trained with Horovod's TF2 Keras API.

Written as a Horovod user writes it for TensorFlow 2: `import
horovod.tensorflow.keras as hvd`, GPU pinning by local rank, a tf.data input
pipeline sharded by rank, DistributedOptimizer, model.compile (Horovod's
`experimental_run_tf_function=False` included), BroadcastGlobalVariables,
MetricAverage and LearningRateWarmup callbacks, a metric-driven Keras
callback after them, checkpoints on rank 0 only.
It runs on TensorFlow 2.21 with Keras 3 (Horovod itself stops at TF 2.15).

The data are synthetic MNIST-shaped images generated here (no download):
each class has a fixed random template and every image is its template plus
noise, so the network has something to learn and the loss goes down.

    srun -N 2 -n 4 --horovod=on /opt/tandem-deps/tf/bin/python examples/tensorflow2_keras_mnist.py
    tandem-run -np 4 /opt/tandem-deps/tf/bin/python examples/tensorflow2_keras_mnist.py
    /opt/tandem-deps/tf/bin/python examples/tensorflow2_keras_mnist.py      # one process
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd


def parse_args():
    p = argparse.ArgumentParser(description="Horovod-style TF2 Keras MNIST (synthetic data)")
    p.add_argument("--batch-size", type=int, default=64, help="per-rank batch size")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=0,
                   help="steps per epoch in total over the ranks' shards (0: one pass "
                        "over the data set)")
    p.add_argument("--lr", type=float, default=0.001, help="learning rate for one rank")
    p.add_argument("--optimizer", choices=("adam", "sgd"), default="adam")
    p.add_argument("--warmup-epochs", type=int, default=1,
                   help="LearningRateWarmupCallback epochs (0: none)")
    p.add_argument("--no-scale-lr", action="store_true",
                   help="do not multiply the learning rate by the number of ranks")
    p.add_argument("--dropout", type=float, default=0.25,
                   help="dropout rate (0 makes a run deterministic)")
    p.add_argument("--num-samples", type=int, default=8192)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--fp16-allreduce", action="store_true")
    p.add_argument("--run-eagerly", action="store_true",
                   help="model.compile(run_eagerly=True) instead of a tf.function step")
    p.add_argument("--checkpoint", default="",
                   help="rank 0 writes a checkpoint per epoch here (e.g. ckpt-{epoch}.keras)")
    p.add_argument("--save", default="",
                   help="every rank saves its final weights to this .npz path; {rank} is "
                        "replaced by the rank")
    p.add_argument("--verbose", type=int, default=2)
    return p.parse_args()


def synthetic_mnist(n, seed):
    """28x28x1 float images of 10 classes: template + noise, and int64
    labels. The same seed gives the same data set in every process."""
    rs = np.random.RandomState(seed)
    templates = (rs.rand(10, 28, 28, 1) > 0.5).astype(np.float32)
    labels = rs.randint(0, 10, size=n).astype(np.int64)
    noise = rs.randn(n, 28, 28, 1).astype(np.float32)
    images = (templates[labels] - 0.5) * 2 + noise
    return images, labels


def make_model(dropout):
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(32, [3, 3], activation="relu"),
        tf.keras.layers.Conv2D(64, [3, 3], activation="relu"),
        tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
        tf.keras.layers.Dropout(dropout),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dropout(dropout),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])


class Throughput(tf.keras.callbacks.Callback):
    """Images per second over the whole run, in total over the ranks."""

    def __init__(self, batch_size):
        super().__init__()
        self.batch_size = batch_size
        self.images = 0
        self.start = None

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.images += self.batch_size

    def on_train_end(self, logs=None):
        elapsed = time.perf_counter() - self.start
        total = float(hvd.allreduce(np.array(float(self.images)), op=hvd.Sum, name="images"))
        if hvd.rank() == 0:
            print("trained %d steps on %d ranks: %.1f images/sec in total, %.1f per rank"
                  % (self.images // self.batch_size, hvd.size(), total / elapsed,
                     total / elapsed / hvd.size()), flush=True)


class PrintLoss(tf.keras.callbacks.Callback):
    """One line per epoch on rank 0, after MetricAverageCallback averaged it."""

    def on_epoch_end(self, epoch, logs=None):
        if hvd.rank() == 0:
            print("epoch %d loss %.4f accuracy %.4f lr %.6g"
                  % (epoch + 1, logs["loss"], logs["accuracy"], logs.get("lr", float("nan"))),
                  flush=True)


def main():
    args = parse_args()
    # Horovod: initialize Horovod.
    hvd.init()

    # Horovod: pin GPU to be used to process local rank (one GPU per process).
    gpus = tf.config.experimental.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    if gpus:
        tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
    # Ranks share the node's cores.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)

    tf.keras.utils.set_random_seed(args.seed)  # the same initial weights on every rank
    images, labels = synthetic_mnist(args.num_samples, args.seed)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
    if not args.no_shuffle:
        dataset = dataset.shuffle(10000, seed=args.seed)
    # Horovod: each rank takes every size-th sample: global batch i of the
    # ranks together is batch i of one process with size x the batch size.
    dataset = dataset.shard(hvd.size(), hvd.rank()).batch(args.batch_size)

    model = make_model(args.dropout)

    # Horovod: adjust learning rate based on number of workers.
    scaled_lr = args.lr if args.no_scale_lr else args.lr * hvd.size()
    opt = (tf.optimizers.Adam(scaled_lr) if args.optimizer == "adam"
           else tf.optimizers.SGD(scaled_lr))

    # Horovod: add Horovod DistributedOptimizer.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    opt = hvd.DistributedOptimizer(opt, backward_passes_per_step=1,
                                   average_aggregated_gradients=True, compression=compression)

    # Horovod: Specify `experimental_run_tf_function=False` to ensure TensorFlow
    # uses hvd.DistributedOptimizer() to compute gradients (accepted and
    # dropped on Keras 3, as tf.keras 2.2-2.15 did).
    model.compile(loss=tf.losses.SparseCategoricalCrossentropy(), optimizer=opt,
                  metrics=["accuracy"], experimental_run_tf_function=False,
                  run_eagerly=args.run_eagerly)

    callbacks = [
        # Horovod: broadcast initial variable states from rank 0 to all other processes.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Horovod: average metrics among workers at the end of every epoch.
        hvd.callbacks.MetricAverageCallback(),
    ]
    if args.warmup_epochs:
        # Horovod: scale the learning rate `lr` ---> `lr * hvd.size()` during
        # the first epochs. See https://arxiv.org/abs/1706.02677 for details.
        callbacks.append(hvd.callbacks.LearningRateWarmupCallback(
            initial_lr=scaled_lr, warmup_epochs=args.warmup_epochs, verbose=1))
    callbacks += [
        # Reduce the learning rate if training plateaus: after
        # MetricAverageCallback, so every rank sees the same (averaged) loss
        # and changes its learning rate at the same epoch.
        tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", patience=10, verbose=0),
        PrintLoss(), Throughput(args.batch_size)]

    # Horovod: save checkpoints only on worker 0 to prevent other workers from corrupting them.
    if hvd.rank() == 0 and args.checkpoint:
        callbacks.append(tf.keras.callbacks.ModelCheckpoint(args.checkpoint))

    # Horovod: adjust number of steps based on number of workers.
    steps = args.steps_per_epoch or args.num_samples // args.batch_size
    model.fit(dataset, steps_per_epoch=max(1, steps // hvd.size()), callbacks=callbacks,
              epochs=args.epochs, verbose=args.verbose if hvd.rank() == 0 else 0)

    if args.save:
        np.savez(args.save.format(rank=hvd.rank()),
                 *[np.asarray(w) for w in model.get_weights()])


if __name__ == "__main__":
    main()

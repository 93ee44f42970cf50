"""hvd.SyncBatchNormalization (horovod.tensorflow) on N ranks against the
process's own BatchNormalization over the concatenated batch of every rank,
computed on each rank from the same seeded data: outputs, moving statistics,
the input gradient of this rank's rows and the parameter gradients summed
over the ranks, eagerly and in a tf.function; batches of different sizes on
different ranks; what it refuses. Runs on whichever Keras tf.keras is
(Keras 3, or Keras 2 with TF_USE_LEGACY_KERAS=1 / TF 2.15)."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd

try:
    from report import run_checks
except ImportError:
    from workers.report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def _batches(rows_per_rank, shape, seed):
    """Every rank's batch (the same arrays on every rank), float32."""
    rng = np.random.RandomState(seed)
    return [(rng.standard_normal((n,) + shape) * (r + 1) + r).astype(np.float32)
            for r, n in enumerate(rows_per_rank)]


def _run(layer, x, weights):
    """Output of layer(x, training=True) and the gradients of sum(out * w)
    with respect to x and the layer's gamma and beta."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x, training=True)
        loss = tf.reduce_sum(out * weights)
    grads = tape.gradient(loss, [x, layer.gamma, layer.beta])
    return out, grads


def _compare(rows_per_rank, shape, axis, graph, seed):
    rank = hvd.rank()
    parts = _batches(rows_per_rank, shape, seed)
    w_parts = _batches(rows_per_rank, shape, seed + 1)
    start = sum(rows_per_rank[:rank])
    stop = start + rows_per_rank[rank]

    reference = tf.keras.layers.BatchNormalization(axis=axis, momentum=0.5)
    sync = hvd.SyncBatchNormalization(axis=axis, momentum=0.5)
    run = tf.function(_run) if graph else _run
    ref_out, ref_grads = _run(reference, tf.constant(np.concatenate(parts)),
                              tf.constant(np.concatenate(w_parts)))
    out, grads = run(sync, tf.constant(parts[rank]), tf.constant(w_parts[rank]))

    np.testing.assert_allclose(out.numpy(), ref_out.numpy()[start:stop], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sync.moving_mean.numpy(), reference.moving_mean.numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sync.moving_variance.numpy(), reference.moving_variance.numpy(),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grads[0].numpy(), ref_grads[0].numpy()[start:stop],
                               rtol=1e-3, atol=1e-4)
    for local, ref in zip(grads[1:], ref_grads[1:]):  # what DistributedOptimizer(op=Sum) adds
        total = hvd.allreduce(local, op=hvd.Sum, name="syncbn.grad.%d" % seed)
        np.testing.assert_allclose(total.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)


@check
def equal_batches_eager():
    _compare([4] * hvd.size(), (3,), -1, graph=False, seed=10)


@check
def equal_batches_channels_first_graph():
    _compare([2] * hvd.size(), (3, 5), 1, graph=True, seed=20)


@check
def uneven_batches_are_the_concatenated_batch():
    _compare([r + 1 for r in range(hvd.size())], (4,), -1, graph=False, seed=30)


@check
def inference_uses_moving_statistics_without_collective():
    layer = hvd.SyncBatchNormalization()
    x = tf.constant(np.full((2, 3), float(hvd.rank()), np.float32))
    out = layer(x, training=False)  # the moving statistics (0 and 1 at first), not the batch's
    np.testing.assert_allclose(out.numpy(), x.numpy() / np.sqrt(1 + layer.epsilon), rtol=1e-5)


@check
def fused_is_refused():
    for fused in (True, None):
        try:
            hvd.SyncBatchNormalization(fused=fused)
        except ValueError as exc:
            assert "fused=True" in str(exc), exc
        else:
            raise AssertionError("fused=%r was accepted" % fused)


def main():
    hvd.init()
    return run_checks(CHECKS)


if __name__ == "__main__":
    sys.exit(main())

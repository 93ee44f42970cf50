"""Batch-normalisation statistics over every rank of a process set.

The Keras SyncBatchNormalization layers (tandem.keras on Keras 3,
tandem.keras2 on Keras 2) override their BatchNormalization's moments with
``group_moments``; the arithmetic lives here, below Keras, so that both
Kerases share it. Each rank contributes its channel sums (count x mean,
count x E[x^2]) and counts; one differentiable allreduce (Sum) adds them,
and its backward, an allreduce of the gradient, gives autograd the
cross-rank terms of the batch-norm gradient.
"""

import tensorflow as tf

from tandem.tensorflow import mpi_ops


def group_moments(mean, variance, count, process_set=mpi_ops.global_process_set):
    """The mean and biased variance of every rank's batch together, from
    this rank's ``mean``, ``variance`` and element ``count`` per channel
    (``count`` broadcasts to ``mean``'s shape). Weighted by count, so ranks
    with batches of different sizes get the statistics of the concatenated
    batch; Horovod weights each rank equally, which is the same result where
    the batches are equal. A rank with an empty batch contributes nothing."""
    if process_set.size() == 1:
        return mean, variance
    count = tf.broadcast_to(tf.cast(count, mean.dtype), tf.shape(mean))
    local = tf.stack([tf.math.multiply_no_nan(mean, count),
                      tf.math.multiply_no_nan(variance + tf.square(mean), count),
                      count])
    total = mpi_ops._allreduce(local, op=mpi_ops.Sum, process_set=process_set)
    sum_x, sum_x2, n = tf.unstack(total)
    group_mean = tf.math.divide_no_nan(sum_x, n)
    # E[x^2] - E[x]^2 can round below zero for a near-constant channel
    group_variance = tf.maximum(tf.math.divide_no_nan(sum_x2, n) - tf.square(group_mean), 0.0)
    return group_mean, group_variance

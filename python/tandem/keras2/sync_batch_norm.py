"""``hvd.SyncBatchNormalization`` (horovod.tensorflow) on Keras 2 (tf_keras,
or TensorFlow <= 2.15's keras): its BatchNormalization whose training
statistics span every rank (tandem.tensorflow.batch_stats). horovod.tensorflow
imports it on first use."""

import tensorflow as tf

from tandem._which_keras import keras2 as _keras2
from tandem.tensorflow import batch_stats, mpi_ops

_keras = _keras2()
if _keras is None:
    raise ImportError("tandem.keras2.sync_batch_norm serves Keras 2; this process's keras is "
                      "Keras 3: use tandem.keras.sync_batch_norm (horovod.tensorflow chooses)")


class SyncBatchNormalization(_keras.layers.BatchNormalization):
    """BatchNormalization whose batch mean and variance in training are
    those of every rank's batch together (one allreduce per call: every rank
    must call it the same number of times), as Horovod's. Only
    ``fused=False``: the fused kernel computes its moments inside itself.
    ``process_set`` (not Horovod's; torch's SyncBatchNorm has it) limits the
    ranks."""

    def __init__(self, fused=False, process_set=mpi_ops.global_process_set, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        super().__init__(fused=False, **kwargs)
        self._process_set = process_set

    def _moments(self, inputs, reduction_axes, keep_dims, mask=None):
        mean, variance = super()._moments(inputs, reduction_axes, keep_dims=keep_dims,
                                          mask=mask)
        if mask is None:
            count = tf.reduce_prod(tf.gather(tf.shape(inputs), reduction_axes))
        else:  # the elements Keras weighed: the mask broadcast over the channels
            weights = tf.broadcast_to(tf.expand_dims(tf.cast(mask, inputs.dtype), -1),
                                      tf.shape(inputs))
            count = tf.reduce_sum(weights, reduction_axes, keepdims=keep_dims)
        return batch_stats.group_moments(mean, variance, count, self._process_set)

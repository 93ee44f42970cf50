"""``hvd.SyncBatchNormalization`` (horovod.tensorflow) on Keras 3, TensorFlow
backend: Keras's BatchNormalization whose training statistics span every
rank (tandem.tensorflow.batch_stats). horovod.tensorflow imports it on first
use, so that importing horovod.tensorflow does not load Keras."""

import keras
import tensorflow as tf

from tandem.tensorflow import batch_stats, mpi_ops


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """BatchNormalization whose batch mean and variance in training are
    those of every rank's batch together (one allreduce per call: every rank
    must call it the same number of times). ``fused`` is Horovod's argument:
    only False (Keras 3 has no fused kernel). ``process_set`` (not
    Horovod's; torch's SyncBatchNorm has it) limits the ranks."""

    def __init__(self, fused=False, process_set=mpi_ops.global_process_set, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if kwargs.get("synchronized"):
            raise ValueError("SyncBatchNormalization synchronizes over Horovod's ranks; "
                             "synchronized=True (tf.distribute's) is not supported: leave it "
                             "out")
        super().__init__(**kwargs)
        self._process_set = process_set

    def _moments(self, inputs, mask):
        mean, variance = super()._moments(inputs, mask)
        axes = self._reduction_axes
        if mask is None:
            count = tf.reduce_prod(tf.gather(tf.shape(inputs), axes))
        else:  # the elements Keras weighed: the mask broadcast over the channels
            weights = tf.broadcast_to(tf.expand_dims(tf.cast(mask, inputs.dtype), -1),
                                      tf.shape(inputs))
            count = tf.reshape(tf.reduce_sum(weights, axes), tf.shape(mean))
        return batch_stats.group_moments(mean, variance, count, self._process_set)

"""``horovod.tensorflow.sync_batch_norm``: SyncBatchNormalization of the
process's Keras (tandem._which_keras), the Keras ``tf.keras`` is."""

from tandem._which_keras import keras2 as _keras2

if _keras2() is not None:
    from tandem.keras2.sync_batch_norm import SyncBatchNormalization
else:
    from tandem.keras.sync_batch_norm import SyncBatchNormalization  # noqa: F401

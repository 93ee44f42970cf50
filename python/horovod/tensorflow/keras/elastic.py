"""``horovod.tensorflow.keras.elastic`` on Tandem: the same names as
``horovod.keras.elastic``, which picks the Keras in use."""

from horovod.keras.elastic import (
    CommitStateCallback, KerasState, UpdateBatchStateCallback, UpdateEpochStateCallback, run,
)

__all__ = ['KerasState', 'CommitStateCallback', 'UpdateBatchStateCallback',
           'UpdateEpochStateCallback', 'run']

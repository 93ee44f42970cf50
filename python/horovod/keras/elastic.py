"""``horovod.keras.elastic`` on Tandem: KerasState, the commit, batch and
epoch callbacks, run (Keras 3; docs/elastic.md)."""

from tandem.keras.elastic import (
    CommitStateCallback, KerasState, UpdateBatchStateCallback, UpdateEpochStateCallback, run,
)

__all__ = ['KerasState', 'CommitStateCallback', 'UpdateBatchStateCallback',
           'UpdateEpochStateCallback', 'run']

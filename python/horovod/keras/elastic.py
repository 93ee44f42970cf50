"""``horovod.keras.elastic`` on Tandem: KerasState, the commit, batch and
epoch callbacks, run (tandem.keras.elastic, or tandem.keras2.elastic under
Keras 2; docs/elastic.md)."""

from tandem._which_keras import keras2 as _keras2

if _keras2() is not None:
    from tandem.keras2.elastic import (
        CommitStateCallback, KerasState, UpdateBatchStateCallback, UpdateEpochStateCallback, run,
    )
else:
    from tandem.keras.elastic import (
        CommitStateCallback, KerasState, UpdateBatchStateCallback, UpdateEpochStateCallback, run,
    )

__all__ = ['KerasState', 'CommitStateCallback', 'UpdateBatchStateCallback',
           'UpdateEpochStateCallback', 'run']

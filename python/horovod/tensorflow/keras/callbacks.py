"""``horovod.tensorflow.keras.callbacks`` on Tandem (tandem.keras.callbacks, or
tandem.keras2.callbacks under Keras 2)."""

from tandem._which_keras import keras2 as _keras2

if _keras2() is not None:
    from tandem.keras2.callbacks import (
        BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
        LearningRateWarmupCallback, MetricAverageCallback,
    )
else:
    from tandem.keras.callbacks import (  # noqa: F401
        BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
        LearningRateWarmupCallback, MetricAverageCallback,
    )

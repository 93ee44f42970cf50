"""``horovod.tensorflow.keras.callbacks`` on Tandem: the same names as
``horovod.keras.callbacks``, which picks the Keras in use."""

from horovod.keras.callbacks import (  # noqa: F401
    BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
    LearningRateWarmupCallback, MetricAverageCallback,
)

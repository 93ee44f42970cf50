"""``horovod.keras.callbacks`` on Tandem (tandem.keras.callbacks)."""

from tandem.keras.callbacks import (  # noqa: F401
    BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
    LearningRateWarmupCallback, MetricAverageCallback,
)

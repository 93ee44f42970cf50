"""Horovod's Keras callbacks on Keras 2 (tf_keras, or TF <= 2.15's keras).

Horovod's behaviour (horovod/_keras/callbacks.py), eagerly, on the Keras 2
module this process uses (tandem._which_keras); what they share with Keras
3's (tandem.keras.callbacks) is tandem.keras_common.callbacks':

* BroadcastGlobalVariablesCallback: at the end of the first batch (Keras 2
  optimizers make their slots at the first update), the model's variables
  but the registered local ones, then the optimizer's, from ``root_rank``.
* MetricAverageCallback: every entry of the epoch's logs replaced by its
  mean over the ranks, in name order; ranks that logged different metrics
  fail together with each rank's names (in Horovod they would pair unrelated
  values or wait forever).
* LearningRateScheduleCallback / LearningRateWarmupCallback: Horovod's
  formulas and hooks, written with ``backend.set_value`` to
  ``optimizer.lr``. Momentum correction as in Horovod when ``momentum`` is
  a variable (the legacy optimizers' hyperparameter: set to
  ``momentum * new / old`` for one batch). The optimizers of
  ``keras.optimizers`` since Keras 2.11 hold ``momentum`` as a Python float
  that a compiled step has frozen, which Horovod's set_value cannot change
  (it raises there); for their SGD and RMSprop the momentum buffers, which
  carry the learning rate, are scaled by ``new / old`` instead, the same
  step for SGD and RMSprop (docs/keras.md).
* BestModelCheckpoint: ModelCheckpoint(save_best_only=True) whose filepath
  may be set later.
"""

import numpy as np
import tensorflow as tf

from tandem import process_sets as _ps
from tandem._which_keras import keras2
from tandem.keras_common import callbacks as _impl
from tandem.tensorflow import functions as _functions

keras = keras2()
if keras is None:
    raise ImportError("tandem.keras2 serves Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1, or "
                      "keras 2.x); this process uses Keras 3: use tandem.keras")
K = keras.backend


class BroadcastGlobalVariablesCallback(_impl.BroadcastGlobalVariablesCallbackImpl,
                                       keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from
    ``root_rank`` at the end of the first batch."""

    @staticmethod
    def _key(var):
        return var.ref()

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        model_vars = [v for v in self.model.variables if self._key(v) not in self._local_keys]
        _functions.broadcast_variables(model_vars, root_rank=self.root_rank)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            _functions.broadcast_variables(list(optimizer.variables()),
                                           root_rank=self.root_rank)
        self.broadcast_done = True


def _log_value(value):
    return float(np.asarray(value))


def average_logs(logs, process_set=_ps.global_process_set):
    """Replaces every value of ``logs`` by its mean over the set, in place."""
    return _impl.average_logs(logs, _log_value, process_set)


class MetricAverageCallback(_impl.MetricAverageCallbackImpl, keras.callbacks.Callback):
    """Averages every metric of the epoch's logs over the ranks, in place
    (tandem.keras_common.callbacks.MetricAverageCallbackImpl)."""

    _log_value = staticmethod(_log_value)


class LearningRateScheduleCallback(_impl.LearningRateScheduleCallbackImpl,
                                   keras.callbacks.Callback):
    """Horovod's learning-rate schedule
    (tandem.keras_common.callbacks.LearningRateScheduleCallbackImpl) on a
    Keras 2 optimizer's ``lr``, with Horovod's momentum correction."""

    restore_momentum = None

    def _get_lr(self):
        return K.get_value(self.model.optimizer.lr)

    def _set_lr(self, value):
        K.set_value(self.model.optimizer.lr, value)

    def _correct_momentum(self, old_lr, new_lr):
        optimizer = self.model.optimizer
        momentum = getattr(optimizer, "momentum", None)
        if isinstance(momentum, tf.Variable):  # legacy optimizers: Horovod's way
            self.restore_momentum = K.get_value(momentum)
            K.set_value(momentum, self.restore_momentum * new_lr / old_lr)
            return
        _impl.scale_momentum_buffers(optimizer, keras.optimizers, old_lr, new_lr)

    def on_batch_end(self, batch, logs=None):
        if self.restore_momentum:
            K.set_value(self.model.optimizer.momentum, self.restore_momentum)
            self.restore_momentum = None


class LearningRateWarmupCallback(_impl.LearningRateWarmupCallbackImpl,
                                 LearningRateScheduleCallback):
    """Horovod's gradual warmup
    (tandem.keras_common.callbacks.LearningRateWarmupCallbackImpl) on Keras 2."""


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model; the filepath may be
    set after construction, as Horovod's estimators do."""

    def __init__(self, monitor="val_loss", verbose=0, save_weights_only=False, mode="auto",
                 save_freq="epoch"):
        super().__init__(filepath=None, monitor=monitor, verbose=verbose, save_best_only=True,
                         save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)

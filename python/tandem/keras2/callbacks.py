"""Horovod's Keras callbacks on Keras 2 (tf_keras, or TF <= 2.15's keras).

Horovod's behaviour (horovod/_keras/callbacks.py), eagerly, on the Keras 2
module this process uses (tandem._which_keras):

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

from tandem import _arrays, _basics, _collectives, _objects, _ops, errors
from tandem import process_sets as _ps
from tandem._which_keras import keras2
from tandem.tensorflow import functions as _functions

keras = keras2()
if keras is None:
    raise ImportError("tandem.keras2 serves Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1, or "
                      "keras 2.x); this process uses Keras 3: use tandem.keras")
K = keras.backend

_metric_calls = {}


def _ref(var):
    return var.ref()


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from
    ``root_rank`` at the end of the first batch."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device  # accepted as in Horovod; a value is reduced where it lives
        self.broadcast_done = False
        self._local_vars = set()
        if local_variables is None:
            local_variables = []
        elif not isinstance(local_variables, (list, tuple, set)):
            local_variables = [local_variables]
        for var in local_variables:
            self.register_local_var(var)

    def register_local_var(self, var):
        """A variable the broadcast leaves alone (worker-local state)."""
        self._local_vars.add(_ref(var))

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        model_vars = [v for v in self.model.variables if _ref(v) not in self._local_vars]
        _functions.broadcast_variables(model_vars, root_rank=self.root_rank)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            _functions.broadcast_variables(list(optimizer.variables()),
                                           root_rank=self.root_rank)
        self.broadcast_done = True


def average_logs(logs, process_set=_ps.global_process_set):
    """Replaces every value of ``logs`` by its mean over the set, in place."""
    if not logs:
        return logs
    set_id = _ps.ident(process_set, "MetricAverageCallback")
    _metric_calls[set_id] = call = _metric_calls.get(set_id, 0) + 1
    keys = sorted(logs)
    everyone = _objects.allgather_object(keys, "keras2.MetricAverageCallback.%d.names" % call,
                                         set_id)
    if any(k != keys for k in everyone):
        ranks = _collectives.process_set_ranks(set_id)
        raise errors.make(
            "TANDEM_ERR_MISMATCH",
            "MetricAverageCallback: the ranks logged different metrics (%s): every rank must "
            "compile the same metrics and see the same callbacks before this one"
            % "; ".join("rank %d: %s" % (r, ", ".join(k) or "none")
                        for r, k in zip(ranks, everyone)))
    values = np.array([float(np.asarray(logs[k])) for k in keys], dtype=np.float64)
    mean = _arrays.start_allreduce("keras2.MetricAverageCallback.%d" % call, values,
                                   _ops.Average, process_set=set_id).wait()
    for key, value in zip(keys, mean):
        logs[key] = np.float32(value) if isinstance(logs[key], np.float32) else float(value)
    return logs


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages every metric of the epoch's logs over the ranks, in place, so
    callbacks after it see the mean."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        average_logs(logs)


def _momentum_buffers(optimizer):
    """The momentum buffers of a Keras >= 2.11 SGD or RMSprop (they carry the
    learning rate as a factor), or None."""
    optimizers = keras.optimizers
    if isinstance(optimizer, optimizers.SGD):
        return [m for m in getattr(optimizer, "momentums", []) if m is not None]
    if isinstance(optimizer, optimizers.RMSprop):
        return [m for m in getattr(optimizer, "_momentums", []) if m is not None]
    return None


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """``lr = initial_lr * multiplier(epoch)`` from ``start_epoch`` up to
    ``end_epoch``; per epoch (``staircase``) or per batch with the
    fractional epoch."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.restore_momentum = None
        self.current_epoch = None
        if not callable(multiplier):
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        params = self.params or {}
        if params.get("steps"):
            return params["steps"]
        if params.get("samples") and params.get("batch_size"):
            return params["samples"] // params["batch_size"]
        raise ValueError("Could not autodetect the number of steps per epoch. Please specify "
                         "the steps_per_epoch parameter to the %s()" % self.__class__.__name__)

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = K.get_value(optimizer.lr)
        new_lr = self.initial_lr * self.multiplier(epoch)
        K.set_value(optimizer.lr, new_lr)
        if not self.momentum_correction or not hasattr(optimizer, "momentum"):
            return
        momentum = optimizer.momentum
        if isinstance(momentum, tf.Variable):  # legacy optimizers: Horovod's way
            self.restore_momentum = K.get_value(momentum)
            K.set_value(momentum, self.restore_momentum * new_lr / old_lr)
            return
        buffers = _momentum_buffers(optimizer)
        if momentum and buffers and old_lr != 0 and new_lr != old_lr:
            for buffer in buffers:
                buffer.assign(buffer * (new_lr / old_lr))

    def _restore_momentum_if_needed(self):
        if self.restore_momentum:
            K.set_value(self.model.optimizer.momentum, self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if (self.current_epoch < self.start_epoch or
                (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_batch_end(self, batch, logs=None):
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = K.get_value(self.model.optimizer.lr)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Gradual warmup from ``initial_lr / size`` to ``initial_lr`` over
    ``warmup_epochs`` (Goyal et al. 2017), per batch."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            size = _basics.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _basics.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g."
                  % (epoch + 1, K.get_value(self.model.optimizer.lr)))


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model; the filepath may be
    set after construction, as Horovod's estimators do."""

    def __init__(self, monitor="val_loss", verbose=0, save_weights_only=False, mode="auto",
                 save_freq="epoch"):
        super().__init__(filepath=None, monitor=monitor, verbose=verbose, save_best_only=True,
                         save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)

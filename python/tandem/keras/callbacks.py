"""Horovod's Keras callbacks on Keras 3, for every backend.

They run eagerly between steps and work on host values through the core's
``tandem._arrays``: variable values as NumPy arrays, metric logs as floats,
the same code for every Keras backend. Semantics are Horovod's
(horovod/_keras/callbacks.py), mapped onto Keras 3; what they share with
Keras 2's (tandem.keras2.callbacks) is tandem.keras_common.callbacks':

* BroadcastGlobalVariablesCallback: the root's model variables (weights and
  non-trainable state) and optimizer variables (slots, iterations, learning
  rate) overwrite every other rank's; random generators' states (Dropout's
  SeedGenerator) are left alone, so each rank keeps its own random stream.
  Keras 3 builds the model and optimizer before ``on_train_begin``, so the
  broadcast happens there and the first step already starts from the root's
  state; Horovod (Keras 2, where optimizer
  slots appeared at the first update) broadcast at the end of the first
  batch, which is still what happens when something is not built yet at
  ``on_train_begin``. Once per callback object, as Horovod.
* MetricAverageCallback: at the end of every epoch each entry of ``logs`` is
  replaced by its mean over the ranks (one allreduce for all of them, sorted
  by name). Ranks whose logs hold different metrics fail together with an
  error listing each rank's names. Put it before callbacks that read metrics.
* LearningRateScheduleCallback / LearningRateWarmupCallback: Horovod's
  formulas (``initial_lr * multiplier(epoch)``, per epoch with
  ``staircase=True``, else per batch with the fractional epoch
  ``epoch + batch / steps_per_epoch``), written to ``optimizer.learning_rate``
  (a variable, so a compiled train step sees it). Momentum correction: when
  the learning rate changes by ``r = new / old``, the momentum buffers of SGD
  and RMSprop (which carry the learning rate) are multiplied by ``r`` before
  the step, i.e. the step runs as if ``momentum * r`` were the momentum, as
  Horovod's temporary momentum change does (exactly for SGD and RMSprop; for
  Nesterov SGD the look-ahead term of that one step keeps ``momentum``).
  Keras 3 optimizers read ``momentum`` as a Python float fixed when the step
  is compiled, so Horovod's way (setting the attribute for one batch) would
  not reach a compiled step.
* BestModelCheckpoint: ModelCheckpoint with ``save_best_only=True``; the
  filepath may be given later (``callback.filepath = ...``) as Horovod's
  estimators do.
"""

import numpy as np

import keras

from tandem import _arrays, _basics, _names
from tandem import process_sets as _ps
from tandem.keras_common import callbacks as _impl

# Numbered per process set (tandem._names.sequence): every member of a set
# makes the same calls in the same order, so they agree across its ranks,
# also when only some ranks call into a smaller set.
_BROADCASTS = "keras.broadcast"


def _is_rng_state(var):
    # keras.random.SeedGenerator's state (Dropout, random augmentation
    # layers): each rank keeps its own random stream, as each Horovod process
    # had under Keras 2, where these streams were not variables at all.
    return getattr(var, "name", "") == "seed_generator_state"


def _variables_of(model, exclude_keys=()):
    """The model's and its optimizer's variables, in a deterministic order
    (Keras's own: layer order, then optimizer creation order), without the
    random generators' states."""
    variables = [v for v in model.variables
                 if _key(v) not in exclude_keys and not _is_rng_state(v)]
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    return variables


def _key(var):
    # Keras 3 variables have no ref(): the backend variable's identity.
    return id(getattr(var, "value", var)) if keras.backend.backend() != "tensorflow" \
        else getattr(getattr(var, "value", var), "_unique_id", id(var))


def broadcast_variables(variables, root_rank, process_set=_ps.global_process_set, name=None):
    """Overwrites every rank's ``variables`` (Keras or backend variables) with
    root_rank's values; collective over the set."""
    set_id = _ps.ident(process_set, "broadcast_variables")
    values = [np.asarray(keras.ops.convert_to_numpy(v)) for v in variables]
    name = name or "keras.broadcast_variables.%d" % _names.sequence(_BROADCASTS, set_id)
    results = _arrays.wait_all([_arrays.start_broadcast("%s.%d" % (name, i), value, root_rank,
                                                        set_id)
                                for i, value in enumerate(values)])
    if _basics.rank() != root_rank:  # a global rank, as every broadcast's root
        for var, value in zip(variables, results):
            var.assign(value)


class BroadcastGlobalVariablesCallback(_impl.BroadcastGlobalVariablesCallbackImpl,
                                       keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from ``root_rank``
    when training starts (see the module docstring for when exactly)."""

    _key = staticmethod(_key)

    def _built(self):
        """Whether everything to broadcast exists. Keras 3 under TensorFlow
        (no distribution strategy) builds the optimizer only when the first
        step is traced; it is built here, as Keras's own symbolic build and
        compile_from_config do, when the model is."""
        if not self.model.built:
            return False
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        return True

    def _broadcast(self):
        broadcast_variables(_variables_of(self.model, self._local_keys), self.root_rank,
                            name="keras.BroadcastGlobalVariablesCallback.%d"
                            % _names.sequence(_BROADCASTS))
        self.broadcast_done = True

    def on_train_begin(self, logs=None):
        if not self.broadcast_done and self._built():
            self._broadcast()

    def on_batch_end(self, batch, logs=None):
        if not self.broadcast_done:
            self._broadcast()


def _log_value(value):
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


def average_logs(logs, process_set=_ps.global_process_set):
    """Replaces every value of ``logs`` by its mean over the set, in place."""
    return _impl.average_logs(logs, _log_value, process_set)


class MetricAverageCallback(_impl.MetricAverageCallbackImpl, keras.callbacks.Callback):
    """Averages every metric of the epoch's logs over the ranks, in place
    (tandem.keras_common.callbacks.MetricAverageCallbackImpl)."""

    _log_value = staticmethod(_log_value)


def _learning_rate(optimizer, what):
    value = optimizer.learning_rate
    if not isinstance(getattr(optimizer, "_learning_rate", None), keras.Variable):
        raise ValueError(
            "%s sets the optimizer's learning rate, but this optimizer's learning_rate is a "
            "schedule or a callable (%s): create the optimizer with a float learning_rate"
            % (what, type(getattr(optimizer, "_learning_rate", None)).__name__))
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


class LearningRateScheduleCallback(_impl.LearningRateScheduleCallbackImpl,
                                   keras.callbacks.Callback):
    """Horovod's learning-rate schedule
    (tandem.keras_common.callbacks.LearningRateScheduleCallbackImpl) on a
    Keras 3 optimizer's ``learning_rate`` variable."""

    def _get_lr(self):
        return _learning_rate(self.model.optimizer, self.__class__.__name__)

    def _set_lr(self, value):
        # A variable: a compiled train step sees the new value.
        self.model.optimizer.learning_rate = value

    def _correct_momentum(self, old_lr, new_lr):
        # Keras 3 optimizers read ``momentum`` as a Python float fixed when
        # the step is compiled: Horovod's way (setting it for one batch)
        # would not reach a compiled step.
        _impl.scale_momentum_buffers(self.model.optimizer, keras.optimizers, old_lr, new_lr)


class LearningRateWarmupCallback(_impl.LearningRateWarmupCallbackImpl,
                                 LearningRateScheduleCallback):
    """Horovod's gradual warmup
    (tandem.keras_common.callbacks.LearningRateWarmupCallbackImpl) on Keras 3."""


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model (``save_best_only``).
    As in Horovod the path may be set after construction
    (``callback.filepath = ...``); it must end in ``.keras`` (or
    ``.weights.h5`` with ``save_weights_only``), Keras 3's formats."""

    _PLACEHOLDER = {False: "unset.keras", True: "unset.weights.h5"}

    def __init__(self, monitor="val_loss", verbose=0, save_weights_only=False, mode="auto",
                 save_freq="epoch", filepath=None):
        super().__init__(filepath=filepath or self._PLACEHOLDER[bool(save_weights_only)],
                         monitor=monitor, verbose=verbose, save_best_only=True,
                         save_weights_only=save_weights_only, mode=mode, save_freq=save_freq)
        if filepath is None:
            self.filepath = None

    def on_train_begin(self, logs=None):
        if not self.filepath:
            raise ValueError("BestModelCheckpoint has no filepath: set callback.filepath "
                             "(ending in .keras, or .weights.h5 with save_weights_only) "
                             "before model.fit")
        super().on_train_begin(logs)

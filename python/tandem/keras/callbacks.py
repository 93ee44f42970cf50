"""Horovod's Keras callbacks on Keras 3, for every backend.

They run eagerly between steps and work on host values through the core's
``tandem._arrays``: variable values as NumPy arrays, metric logs as floats,
the same code for every Keras backend. Semantics are Horovod's
(horovod/_keras/callbacks.py), mapped onto Keras 3:

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

from tandem import _arrays, _basics, _collectives, _names, _objects, _ops, errors
from tandem import process_sets as _ps

# Names are numbered per process set (tandem._names.sequence): every member
# of a set makes the same calls in the same order, so they agree across its
# ranks, also when only some ranks call into a smaller set.
_BROADCASTS = "keras.broadcast"
_METRICS = "keras.metrics"


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


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from ``root_rank``
    when training starts (see the module docstring for when exactly)."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device  # accepted as in Horovod; the value lives where it lives
        self.broadcast_done = False
        self._local_keys = set()
        if local_variables is None:
            local_variables = []
        elif not isinstance(local_variables, (list, tuple, set)):
            local_variables = [local_variables]
        for var in local_variables:
            self.register_local_var(var)

    def register_local_var(self, var):
        """A variable the broadcast leaves alone (worker-local state)."""
        if not hasattr(var, "assign"):
            raise ValueError("All local variables must be variables; got %s"
                             % type(var).__name__)
        self._local_keys.add(_key(var))

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


def average_logs(logs, process_set=_ps.global_process_set):
    """Replaces every value of ``logs`` by its mean over the set, in place."""
    if logs is None:
        return logs
    set_id = _ps.ident(process_set, "MetricAverageCallback")
    call = _names.sequence(_METRICS, set_id)
    keys = sorted(logs)
    everyone = _objects.allgather_object(keys, "keras.MetricAverageCallback.%d.names" % call,
                                         set_id)
    if any(k != keys for k in everyone):
        ranks = _collectives.process_set_ranks(set_id)
        raise errors.make(
            "TANDEM_ERR_MISMATCH",
            "MetricAverageCallback: the ranks logged different metrics (%s): every rank must "
            "compile the same metrics and see the same callbacks before this one"
            % "; ".join("rank %d: %s" % (r, ", ".join(k) or "none")
                        for r, k in zip(ranks, everyone)))
    if not keys:
        return logs
    values = np.array([float(np.asarray(keras.ops.convert_to_numpy(logs[k])))
                       for k in keys], dtype=np.float64)
    mean = _arrays.start_allreduce("keras.MetricAverageCallback.%d" % call, values,
                                   _ops.Average, process_set=set_id).wait()
    for key, value in zip(keys, mean):
        logs[key] = float(value)
    return logs


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages every metric of the epoch's logs over the ranks, in place, so
    callbacks after it (ReduceLROnPlateau, checkpoints, History) see the mean.
    """

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        average_logs(logs)


def _learning_rate(optimizer, what):
    value = optimizer.learning_rate
    if not isinstance(getattr(optimizer, "_learning_rate", None), keras.Variable):
        raise ValueError(
            "%s sets the optimizer's learning rate, but this optimizer's learning_rate is a "
            "schedule or a callable (%s): create the optimizer with a float learning_rate"
            % (what, type(getattr(optimizer, "_learning_rate", None)).__name__))
    return float(np.asarray(keras.ops.convert_to_numpy(value)))


def _momentum_buffers(optimizer):
    """The optimizer variables whose update carries the learning rate as a
    factor (scaling them by r is the step with momentum * r), or None when
    the optimizer has no such buffers Tandem knows of."""
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # LossScaleOptimizer
    momentum = getattr(optimizer, "momentum", None)
    if not momentum:
        return None
    if isinstance(optimizer, keras.optimizers.SGD):
        return [m for m in getattr(optimizer, "momentums", []) if m is not None]
    if isinstance(optimizer, keras.optimizers.RMSprop):
        return [m for m in getattr(optimizer, "_momentums", []) if m is not None]
    return None


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from
    ``start_epoch`` up to (not including) ``end_epoch``; ``multiplier`` is a
    constant (exponential: ``multiplier ** (epoch - start_epoch)``) or a
    function of the epoch. ``staircase=True``: at the first batch of every
    epoch, integer epoch; otherwise at every batch, with the fractional epoch
    ``epoch + batch / steps_per_epoch``."""

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
        self.current_epoch = None
        if not callable(multiplier):
            factor = multiplier
            self.multiplier = lambda epoch: factor ** (epoch - start_epoch)
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        params = self.params or {}
        if params.get("steps"):
            return params["steps"]
        if params.get("samples") and params.get("batch_size"):
            return params["samples"] // params["batch_size"]
        raise ValueError("Could not autodetect the number of steps per epoch (model.fit "
                         "knows no `steps` here, e.g. a dataset of unknown length). Please "
                         "specify the steps_per_epoch parameter to the %s()"
                         % self.__class__.__name__)

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _learning_rate(optimizer, self.__class__.__name__)
        new_lr = self.initial_lr * self.multiplier(epoch)
        optimizer.learning_rate = new_lr
        if self.momentum_correction and old_lr != 0 and new_lr != old_lr:
            buffers = _momentum_buffers(optimizer)
            if buffers:
                ratio = new_lr / old_lr
                for buffer in buffers:
                    buffer.assign(buffer * ratio)

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

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _learning_rate(self.model.optimizer, self.__class__.__name__)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Gradual warmup (Goyal et al. 2017): ``initial_lr / size`` at the start
    to ``initial_lr`` after ``warmup_epochs``, adjusted every batch:
    ``lr = initial_lr / size * (epoch' * (size - 1) / warmup_epochs + 1)``
    with ``epoch' = epoch + (batch + 1) / steps_per_epoch``."""

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
                  % (epoch + 1, _learning_rate(self.model.optimizer, "warmup")))


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

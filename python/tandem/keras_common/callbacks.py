"""Horovod's Keras callbacks where they do not depend on the Keras version
(horovod/_keras/callbacks.py): the local variables of the broadcast
callback, metric averaging, the learning-rate schedule and warmup, and the
momentum buffers that carry the learning rate. tandem.keras.callbacks
(Keras 3) and tandem.keras2.callbacks (Keras 2) put these mixins on their
Keras's ``Callback`` and define what differs, each beside its reason:

* when the broadcast happens (Keras 3 builds the optimizer before
  ``on_train_begin``; Keras 2 makes the slots at the first update) and how
  a variable is told apart (``var.ref()`` in Keras 2; Keras 3 variables
  have none);
* how the learning rate is read and written (Keras 3: the
  ``learning_rate`` variable; Keras 2: ``backend.get_value/set_value`` of
  ``optimizer.lr``, as Horovod) and momentum correction (Keras 2's legacy
  optimizers hold ``momentum`` in a variable, set for one batch as Horovod
  does; every other optimizer, either Keras, has it as a float a compiled
  step has frozen, so the momentum buffers are scaled instead);
* how a log value becomes a float.
"""

import numpy as np

from tandem import _arrays, _basics, _collectives, _names, _objects, _ops, errors
from tandem import process_sets as _ps

# Numbered per process set (tandem._names.sequence): every member of a set
# makes the same calls in the same order, so the names agree across its
# ranks, also when only some ranks call into a smaller set.
_METRICS = "keras.metrics"


class BroadcastGlobalVariablesCallbackImpl(object):
    """The arguments and local variables of BroadcastGlobalVariablesCallback;
    the Keras version's class defines ``_key(var)`` (a hashable identity of
    a variable) and when it broadcasts."""

    def __init__(self, root_rank, device="", local_variables=None):
        super(BroadcastGlobalVariablesCallbackImpl, self).__init__()
        self.root_rank = root_rank
        self.device = device  # accepted as in Horovod; a value is broadcast where it lives
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
        self._local_keys.add(self._key(var))


def average_logs(logs, value_of, process_set=_ps.global_process_set):
    """Replaces every value of ``logs`` by its mean over the set, in place:
    one allreduce of every entry, in name order. ``value_of(value)``: a log
    value as a float. Ranks whose logs hold different names fail together,
    each rank's names listed (in Horovod they would pair unrelated values
    or wait forever). A numpy float stays a numpy float of its type, as
    Horovod's ``allreduce(constant(value)).numpy()`` left it (Keras 2's logs
    hold np.float32); other values become floats (Keras 3's logs hold them)."""
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
    values = np.array([value_of(logs[k]) for k in keys], dtype=np.float64)
    mean = _arrays.start_allreduce("keras.MetricAverageCallback.%d" % call, values,
                                   _ops.Average, process_set=set_id).wait()
    for key, value in zip(keys, mean):
        old = logs[key]
        logs[key] = type(old)(value) if isinstance(old, np.floating) else float(value)
    return logs


class MetricAverageCallbackImpl(object):
    """Averages every metric of the epoch's logs over the ranks, in place, so
    callbacks after it (ReduceLROnPlateau, checkpoints, History) see the
    mean. The Keras version's class defines ``_log_value(value)``."""

    def __init__(self, device=""):
        super(MetricAverageCallbackImpl, self).__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        average_logs(logs, self._log_value)


def scale_momentum_buffers(optimizer, optimizers, old_lr, new_lr):
    """Momentum correction without touching ``momentum``: the momentum
    buffers of an SGD or RMSprop of ``optimizers`` (the Keras's optimizers
    module), which carry the learning rate as a factor, multiplied by
    ``new_lr / old_lr``, so that the next step runs as if the momentum were
    ``momentum * new_lr / old_lr`` (Horovod's correction; exact for SGD and
    RMSprop, for Nesterov SGD but the look-ahead term of that one step).
    Other optimizers, and one without momentum, are left alone."""
    if old_lr == 0 or new_lr == old_lr:
        return
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # LossScaleOptimizer
    if not getattr(optimizer, "momentum", None):
        return
    if isinstance(optimizer, optimizers.SGD):
        buffers = getattr(optimizer, "momentums", [])
    elif isinstance(optimizer, optimizers.RMSprop):
        buffers = getattr(optimizer, "_momentums", [])
    else:
        return
    ratio = new_lr / old_lr
    for buffer in buffers:
        if buffer is not None:
            buffer.assign(buffer * ratio)


class LearningRateScheduleCallbackImpl(object):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from
    ``start_epoch`` up to (not including) ``end_epoch``; ``multiplier`` is a
    constant (exponential: ``multiplier ** (epoch - start_epoch)``) or a
    function of the epoch. ``staircase=True``: at the first batch of every
    epoch, integer epoch; otherwise at every batch, with the fractional epoch
    ``epoch + batch / steps_per_epoch``.

    The Keras version's class defines ``_get_lr()``, ``_set_lr(value)`` and
    ``_correct_momentum(old_lr, new_lr)``."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super(LearningRateScheduleCallbackImpl, self).__init__()
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
        old_lr = self._get_lr()
        new_lr = self.initial_lr * self.multiplier(epoch)
        self._set_lr(new_lr)
        if self.momentum_correction:
            self._correct_momentum(old_lr, new_lr)

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
            logs["lr"] = self._get_lr()


class LearningRateWarmupCallbackImpl(LearningRateScheduleCallbackImpl):
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

        super(LearningRateWarmupCallbackImpl, self).__init__(
            initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
            momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super(LearningRateWarmupCallbackImpl, self).on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _basics.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g."
                  % (epoch + 1, self._get_lr()))

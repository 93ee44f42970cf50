"""Horovod's elastic API for Keras 3 (``horovod.tensorflow.keras.elastic``,
``horovod.keras.elastic``): KerasState, the commit/epoch/batch callbacks and
run, on the framework-neutral tandem.elastic; any Keras backend. Also
TensorFlowKerasState, which ``horovod.tensorflow.elastic`` exports: a Keras
model's state belongs to this layer, which may use tandem.tensorflow.

The model state is committed to host memory (numpy copies of
``model.variables`` and the optimizer's variables) and restored with
``assign``; sync() broadcasts both from rank 0. As in Horovod, the
optimizer's variables must exist when the state is made (Keras creates them
at the first step: run one step, or ``optimizer.build(model.trainable_variables)``,
before making the state).
"""

import keras

from tandem import _basics, _objects
from tandem.elastic import ObjectState, run_fn


def _optimizer_variables(optimizer):
    if optimizer is None:
        return []
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def _model_built(model):
    return model.built if hasattr(model, "build") else True


def _broadcast_object(obj):
    return _objects.broadcast_object(obj, 0, "elastic.state")


class KerasModelState(ObjectState):
    """A Keras model and optimizer, with extra attributes (``kwargs``).

    ``broadcast_variables(variables, root_rank)`` is the frontend's; the
    TensorFlowKerasState passes tandem.tensorflow's."""

    def __init__(self, model, optimizer, broadcast_variables, **kwargs):
        self.model = model
        if not _model_built(model):
            raise ValueError('Model must be built first. Run `model.build(input_shape)`.')
        self.optimizer = optimizer or model.optimizer
        self._broadcast_variables = broadcast_variables
        self._save_model()
        super(KerasModelState, self).__init__(bcast_object=_broadcast_object,
                                              get_rank=_basics.rank, **kwargs)

    def save(self):
        self._save_model()
        super(KerasModelState, self).save()

    def restore(self):
        self._load_model()
        super(KerasModelState, self).restore()

    def sync(self):
        self._broadcast_variables(list(self.model.variables), 0)
        opt_vars = _optimizer_variables(self.optimizer)
        if opt_vars:
            self._broadcast_variables(opt_vars, 0)
        self._save_model()
        super(KerasModelState, self).sync()

    def _save_model(self):
        self._saved_model_state = [keras.ops.convert_to_numpy(v) for v in self.model.variables]
        self._saved_optimizer_state = [keras.ops.convert_to_numpy(v)
                                       for v in _optimizer_variables(self.optimizer)]

    def _load_model(self):
        for var, saved in zip(self.model.variables, self._saved_model_state):
            var.assign(saved)
        for var, saved in zip(_optimizer_variables(self.optimizer), self._saved_optimizer_state):
            var.assign(saved)


class KerasState(KerasModelState):
    """State representation of a Keras model and optimizer.

    Args:
        model: Keras model.
        optimizer: Optional optimizer, can be compiled into model instead.
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, model, optimizer=None, **kwargs):
        from tandem import keras as _hvd
        super(KerasState, self).__init__(model, optimizer, _hvd.broadcast_variables, **kwargs)


class TensorFlowKerasState(KerasModelState):
    """State representation of a TensorFlow Keras model and optimizer (Keras 3).

    Args:
        model: TensorFlow Keras model.
        optimizer: Optional optimizer, can be compiled into model instead.
        backend: accepted for Horovod's signature (TF1 sessions); unused.
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        from tandem.tensorflow.functions import broadcast_variables
        self.backend = backend
        super(TensorFlowKerasState, self).__init__(model, optimizer, broadcast_variables,
                                                   **kwargs)


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and at the end of
    each epoch."""

    def __init__(self, state, batches_per_commit=1):
        super(CommitStateCallback, self).__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        # Reset for every sync event, so that every rank counts alike.
        self.batches_remaining = self.batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.commit()
            self.batches_remaining = self.batches_per_commit

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self.commit()

    def commit(self):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps `state.batch` at the current batch (0 at the end of each
    epoch); with `steps_per_epoch`, the first epoch after a reset is cut by
    the batches already done."""

    def __init__(self, state):
        super(UpdateBatchStateCallback, self).__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get('steps'):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get('steps')
            self.params['steps'] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps `state.epoch` at the global epoch number, across resets."""

    def __init__(self, state):
        super(UpdateEpochStateCallback, self).__init__()
        self.state = state
        # Keras counts epochs from 0 in every fit(); the state carries the
        # count across resets.
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        # +1: a reset after state.batch went back to 0 must not repeat the epoch.
        self.state.epoch = self.initial_epoch + epoch + 1


def run(func):
    """Decorator used to run the elastic training process (tandem.elastic.run_fn
    with the Keras frontend's init/shutdown as the reset)."""
    return run_fn(_engine_errors(func), _reset)


def _engine_errors(func):
    # Under the TensorFlow backend a failed collective inside a compiled
    # train step reaches Python as a tf.errors.OpError.
    if keras.backend.backend() != "tensorflow":
        return func
    from tandem.tensorflow.elastic import engine_errors
    return engine_errors(func)


def _reset():
    _basics.shutdown()
    _basics.init()


__all__ = ['KerasState', 'CommitStateCallback', 'UpdateBatchStateCallback',
           'UpdateEpochStateCallback', 'run']

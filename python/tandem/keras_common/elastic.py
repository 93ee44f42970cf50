"""Horovod's elastic Keras API on either Keras (horovod/_keras/elastic.py and
horovod/tensorflow/elastic.py's TensorFlowKerasState): the state of a
Keras model and optimizer, and the behaviour of the three callbacks.
tandem.keras.elastic (Keras 3) and tandem.keras2.elastic (Keras 2) put
the callbacks on their Keras's ``Callback`` and give the state their way
of reading a variable and of broadcasting variables.

The model state is committed to host memory (numpy copies of
``model.variables`` and the optimizer's variables) and restored with
``assign``; sync() broadcasts both from rank 0. As in Horovod, the
optimizer's variables must exist when the state is made: a Keras 3
optimizer makes them at its first step or at
``optimizer.build(model.trainable_variables)``; a Keras 2 one has
``iterations`` from the start and its slots after the first step.
"""

from tandem import _basics, _objects
from tandem.elastic import ObjectState


def optimizer_variables(optimizer):
    """The optimizer's variables: ``variables`` is a list in Keras 3, a
    method of Keras 2's legacy optimizers and a callable list of its others."""
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

    ``to_numpy(variable)``: a numpy copy of the variable's value;
    ``broadcast_variables(variables, root_rank)``: the frontend's."""

    def __init__(self, model, optimizer, to_numpy, broadcast_variables, **kwargs):
        self.model = model
        if not _model_built(model):
            raise ValueError('Model must be built first. Run `model.build(input_shape)`.')
        self.optimizer = optimizer or model.optimizer
        self._to_numpy = to_numpy
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
        opt_vars = optimizer_variables(self.optimizer)
        if opt_vars:
            self._broadcast_variables(opt_vars, 0)
        self._save_model()
        super(KerasModelState, self).sync()

    def _save_model(self):
        self._saved_model_state = [self._to_numpy(v) for v in self.model.variables]
        self._saved_optimizer_state = [self._to_numpy(v)
                                       for v in optimizer_variables(self.optimizer)]

    def _load_model(self):
        for var, saved in zip(self.model.variables, self._saved_model_state):
            var.assign(saved)
        for var, saved in zip(optimizer_variables(self.optimizer), self._saved_optimizer_state):
            var.assign(saved)


# The callbacks' behaviour, as mixins placed before the Keras version's
# Callback class. Keras 3 calls on_train_batch_end only; Keras 2's default
# on_train_batch_end calls on_batch_end: defining both here makes each run
# once per batch under either.

class CommitStateCallbackImpl(object):
    """Commits `state` every `batches_per_commit` batches and at the end of
    each epoch."""

    def __init__(self, state, batches_per_commit=1):
        super(CommitStateCallbackImpl, self).__init__()
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


class UpdateBatchStateCallbackImpl(object):
    """Keeps `state.batch` at the current batch (0 at the end of each
    epoch). As Horovod's, it also sets ``params['steps']`` of the first epoch
    after a reset to the steps not yet done; neither Keras 3 nor TensorFlow
    2's Keras 2 reads it back (their fit fixes an epoch's steps before the
    callbacks run), so that epoch runs whole (docs/elastic.md)."""

    def __init__(self, state):
        super(UpdateBatchStateCallbackImpl, self).__init__()
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


class UpdateEpochStateCallbackImpl(object):
    """Keeps `state.epoch` at the global epoch number, across resets."""

    def __init__(self, state):
        super(UpdateEpochStateCallbackImpl, self).__init__()
        self.state = state
        # Keras counts epochs from 0 in every fit(); the state carries the
        # count across resets.
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        # +1: a reset after state.batch went back to 0 must not repeat the epoch.
        self.state.epoch = self.initial_epoch + epoch + 1


def callback_classes(callback_class, module):
    """Horovod's CommitStateCallback, UpdateBatchStateCallback and
    UpdateEpochStateCallback for one Keras: the mixins above on
    ``callback_class`` (that Keras's ``keras.callbacks.Callback``), named as
    Horovod names them, belonging to ``module``; nothing else differs."""
    classes = []
    for impl in (CommitStateCallbackImpl, UpdateBatchStateCallbackImpl,
                 UpdateEpochStateCallbackImpl):
        name = impl.__name__[:-len("Impl")]
        classes.append(type(name, (impl, callback_class),
                            {"__module__": module, "__qualname__": name, "__doc__": impl.__doc__}))
    return tuple(classes)


__all__ = ['KerasModelState', 'CommitStateCallbackImpl', 'UpdateBatchStateCallbackImpl',
           'UpdateEpochStateCallbackImpl', 'callback_classes', 'optimizer_variables']

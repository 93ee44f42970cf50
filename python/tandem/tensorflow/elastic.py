"""``horovod.tensorflow.elastic`` on Tandem: run and TensorFlowState (TF 2,
eager), on the framework-neutral tandem.elastic. TensorFlowKerasState holds
a Keras model and lives with Keras (tandem.keras.elastic, the layer above);
the horovod.tensorflow.elastic shim exports both, as Horovod does.

A collective that fails inside a tf.function reaches Python as a
``tf.errors.OpError`` carrying the engine's error; ``run`` turns it into
HorovodInternalError, as Horovod's run does with its ops' UnknownError, so
that the run restores the last commit and moves to the next generation."""

import functools

import numpy as np
import tensorflow as tf

from tandem import _basics, errors
from tandem.elastic import ObjectState, run_fn
from tandem.tensorflow.functions import broadcast_object, broadcast_variables


def _engine_failure(exc):
    """Whether a TF error carries one of the engine's HorovodInternalError
    classes (a lost peer, a timeout, ...)."""
    text = str(getattr(exc, "message", "") or exc)
    if "HorovodInternalError" in text:
        return True
    errors.code_of("TANDEM_SUCCESS")  # the classes exist once the library is read
    for name in dir(errors):
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, errors.HorovodInternalError) and \
                cls is not errors.HorovodInternalError and name in text:
            return True
    return False


def engine_errors(func):
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except tf.errors.OpError as e:
            if _engine_failure(e):
                raise errors.HorovodInternalError(str(e)) from e
            raise
    return wrapper


def run(func):
    """Decorator used to run the elastic training process: on a lost worker
    every worker restores its last commit and goes on in the job's next
    generation; when workers join, every worker moves there at its next
    commit. Collectives must not be the call to the wrapped function."""
    return run_fn(engine_errors(func), _reset)


def _reset():
    _basics.shutdown()
    _basics.init()


class TensorFlowState(ObjectState):
    """State representation of a list of TensorFlow variables (eager).

    Args:
        variables: List of `tf.Variable` objects to track.
        session: accepted for Horovod's signature (TF1); unused.
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, variables=None, session=None, **kwargs):
        if variables is None:
            raise errors.make("TANDEM_ERR_UNSUPPORTED",
                              "TensorFlowState(variables=None): TF2 has no global variable "
                              "collection; pass the variables to track")
        self.variables = list(variables)
        self.session = session
        self._save_model()
        super(TensorFlowState, self).__init__(bcast_object=broadcast_object, get_rank=_basics.rank,
                                              **kwargs)

    def save(self):
        self._save_model()
        super(TensorFlowState, self).save()

    def restore(self):
        self._load_model()
        super(TensorFlowState, self).restore()

    def sync(self):
        broadcast_variables(self.variables, 0)
        self._save_model()
        super(TensorFlowState, self).sync()

    def _save_model(self):
        self._values = [np.array(var.numpy()) for var in self.variables]

    def _load_model(self):
        for var, value in zip(self.variables, self._values):
            var.assign(value)


__all__ = ['TensorFlowState', 'run']

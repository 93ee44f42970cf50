"""Horovod's elastic API for Keras 3 (``horovod.tensorflow.keras.elastic``,
``horovod.keras.elastic``): KerasState, the commit/epoch/batch callbacks and
run; any Keras backend. Also TensorFlowKerasState, which
``horovod.tensorflow.elastic`` exports: a Keras model's state belongs to
this layer, which may use tandem.tensorflow.

The state and the callbacks' behaviour are tandem.keras_common.elastic's
(the same for Keras 2); what is Keras 3's here: variables are read with
``keras.ops.convert_to_numpy`` (any backend), KerasState broadcasts through
the host (tandem.keras.broadcast_variables, any backend), and run() turns
a TensorFlow backend's op errors into HorovodInternalError.
"""

import keras

from tandem import _basics
from tandem.elastic import run_fn
from tandem.keras_common import elastic as _impl


def _to_numpy(variable):
    return keras.ops.convert_to_numpy(variable)


class KerasState(_impl.KerasModelState):
    """State representation of a Keras model and optimizer.

    Args:
        model: Keras model.
        optimizer: Optional optimizer, can be compiled into model instead.
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, model, optimizer=None, **kwargs):
        from tandem import keras as _hvd
        super(KerasState, self).__init__(model, optimizer, _to_numpy, _hvd.broadcast_variables,
                                         **kwargs)


class TensorFlowKerasState(_impl.KerasModelState):
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
        super(TensorFlowKerasState, self).__init__(model, optimizer, _to_numpy,
                                                   broadcast_variables, **kwargs)


# Horovod's three callbacks: tandem.keras_common.elastic's on Keras 3's Callback.
CommitStateCallback, UpdateBatchStateCallback, UpdateEpochStateCallback = \
    _impl.callback_classes(keras.callbacks.Callback, __name__)


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

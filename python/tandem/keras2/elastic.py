"""Horovod's elastic API for Keras 2 (``horovod.tensorflow.keras.elastic``,
``horovod.keras.elastic`` under tf_keras or TensorFlow <= 2.15's keras):
KerasState, the commit/epoch/batch callbacks and run; also the Keras 2
TensorFlowKerasState that ``horovod.tensorflow.elastic`` exports there.

The state and the callbacks' behaviour are tandem.keras_common.elastic's
(the same for Keras 3); what is Keras 2's here, as in Horovod
(horovod/tensorflow/keras/elastic.py): KerasState is a
TensorFlowKerasState with the Keras backend, variables are tf.Variables
read eagerly and broadcast with tandem.tensorflow's broadcast_variables,
and run is tandem.tensorflow.elastic.run (Keras 2 runs on TensorFlow only).
"""

import numpy as np

from tandem._which_keras import keras2
from tandem.keras_common import elastic as _impl
from tandem.tensorflow.elastic import run
from tandem.tensorflow.functions import broadcast_variables

keras = keras2()
if keras is None:
    raise ImportError("tandem.keras2 serves Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1, or "
                      "keras 2.x); this process uses Keras 3: use tandem.keras")


def _to_numpy(variable):
    return np.array(variable.numpy())


class TensorFlowKerasState(_impl.KerasModelState):
    """State representation of a TensorFlow Keras model and optimizer (Keras 2, eager).

    Args:
        model: TensorFlow Keras model.
        optimizer: Optional optimizer, can be compiled into model instead.
        backend: Horovod's TF1 session source; kept, unused (TF 2 is eager).
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.backend = backend
        super(TensorFlowKerasState, self).__init__(model, optimizer, _to_numpy,
                                                   broadcast_variables, **kwargs)


class KerasState(TensorFlowKerasState):
    """State representation of a `tf.keras` model and optimizer.

    Args:
        model: Keras model.
        optimizer: Optional optimizer, can be compiled into model instead.
        kwargs: Additional properties to sync, will be exposed as attributes of the object.
    """

    def __init__(self, model, optimizer=None, **kwargs):
        super(KerasState, self).__init__(model, optimizer=optimizer, backend=keras.backend,
                                         **kwargs)


# Horovod's three callbacks: tandem.keras_common.elastic's on Keras 2's Callback.
CommitStateCallback, UpdateBatchStateCallback, UpdateEpochStateCallback = \
    _impl.callback_classes(keras.callbacks.Callback, __name__)


__all__ = ['KerasState', 'CommitStateCallback', 'UpdateBatchStateCallback',
           'UpdateEpochStateCallback', 'run']

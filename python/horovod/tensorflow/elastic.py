"""``horovod.tensorflow.elastic`` on Tandem: run, TensorFlowKerasState,
TensorFlowState (docs/elastic.md). TensorFlowKerasState comes from the Keras
layer of the Keras in use (tandem.keras.elastic, or tandem.keras2.elastic
under Keras 2), the others from tandem.tensorflow.elastic."""

from tandem._which_keras import keras2 as _keras2
from tandem.tensorflow.elastic import TensorFlowState, run

if _keras2() is not None:
    from tandem.keras2.elastic import TensorFlowKerasState
else:
    from tandem.keras.elastic import TensorFlowKerasState

__all__ = ['TensorFlowKerasState', 'TensorFlowState', 'run']

"""``horovod.tensorflow.elastic`` on Tandem: run, TensorFlowKerasState,
TensorFlowState (docs/elastic.md). TensorFlowKerasState comes from the Keras
layer (tandem.keras.elastic), the others from tandem.tensorflow.elastic."""

from tandem.keras.elastic import TensorFlowKerasState
from tandem.tensorflow.elastic import TensorFlowState, run

__all__ = ['TensorFlowKerasState', 'TensorFlowState', 'run']

"""``horovod.tensorflow.elastic`` on Tandem: run, TensorFlowKerasState,
TensorFlowState (docs/elastic.md)."""

from tandem.tensorflow.elastic import TensorFlowKerasState, TensorFlowState, run  # noqa: F401

__all__ = ['TensorFlowKerasState', 'TensorFlowState', 'run']

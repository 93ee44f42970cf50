"""``horovod.torch.elastic`` on Tandem: run, TorchState, ElasticSampler."""

from tandem.torch.elastic import ElasticSampler, TorchState, run

__all__ = ["TorchState", "ElasticSampler", "run"]

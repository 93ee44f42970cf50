"""``horovod.torch.elastic.sampler`` on Tandem."""

from tandem.torch.elastic.sampler import ElasticSampler  # noqa: F401

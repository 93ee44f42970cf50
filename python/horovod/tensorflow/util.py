"""``horovod.tensorflow.util`` on Tandem."""

from tandem.tensorflow.util import (  # noqa: F401
    _cache, _executing_eagerly, _make_subgraph, refs_to_vars, vars_to_refs,
)

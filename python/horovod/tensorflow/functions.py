"""``horovod.tensorflow.functions`` on Tandem."""

from tandem.tensorflow.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables,
)

"""``horovod.tensorflow.mpi_ops`` on Tandem (scripts import ops from here too)."""

from tandem._basics import (  # noqa: F401
    cross_rank, cross_size, is_homogeneous, is_initialized, local_rank, local_size, rank,
    shutdown, size,
)
from tandem.tensorflow import init  # noqa: F401
from tandem.tensorflow.mpi_ops import *  # noqa: F403
from tandem.tensorflow.mpi_ops import (  # noqa: F401
    _allreduce, _grouped_allreduce, _grouped_reducescatter, _reducescatter,
)

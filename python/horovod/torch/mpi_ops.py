"""``horovod.torch.mpi_ops`` on Tandem: Horovod's tests and scripts import
ops from here too (``from horovod.torch.mpi_ops import synchronize``)."""

from tandem.torch.mpi_ops import *  # noqa: F403
from tandem.torch.mpi_ops import (  # noqa: F401 (names star-import skips)
    Adasum, Average, Max, Min, Product, Sum, poll, synchronize,
)
from tandem.torch import (  # noqa: F401 (Horovod's mpi_ops holds the basics too)
    init, shutdown, is_initialized, rank, size, local_rank, local_size, cross_rank,
    cross_size, is_homogeneous, mpi_built, mpi_enabled, gloo_built, gloo_enabled, nccl_built,
    cuda_built, rocm_built, ccl_built, ddl_built,
)

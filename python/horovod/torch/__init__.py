"""``horovod.torch`` on Tandem: the same names, backed by tandem.torch."""

from tandem.torch import *  # noqa: F403
from tandem.torch import (  # noqa: F401 (names star-import skips or scripts reach for)
    init, shutdown, is_initialized, rank, size, local_rank, local_size, cross_rank,
    cross_size, is_homogeneous, mpi_built, mpi_enabled, mpi_threads_supported, gloo_built,
    gloo_enabled, nccl_built, cuda_built, rocm_built, ccl_built, ddl_built, gpu_available,
    start_timeline, stop_timeline,
)
from horovod.torch import elastic  # noqa: F401 (hvd.elastic.run, TorchState, ...)

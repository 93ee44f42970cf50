"""The horovod.torch API on libtandem (``import tandem.torch as hvd``).

Differences from Horovod are listed in docs/python.md; everything named here
behaves as Horovod documents it.
"""

import torch as _torch

from tandem import _built
from tandem._basics import (  # noqa: F401
    cross_rank, cross_size, init, is_homogeneous, is_initialized, local_rank, local_size,
    rank, shutdown, size, start_timeline, stop_timeline,
)
from tandem._built import (  # noqa: F401
    ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, gpu_status, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rocm_built,
)
from tandem.errors import HorovodInternalError, TandemError  # noqa: F401
from tandem.torch.compression import Compression  # noqa: F401
from tandem.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters,
)
from tandem.torch.mpi_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, Sum,
    allgather, allgather_async, allreduce, allreduce_, allreduce_async, allreduce_async_,
    alltoall, alltoall_async, barrier, broadcast, broadcast_, broadcast_async,
    broadcast_async_, grouped_allgather, grouped_allgather_async, grouped_allreduce,
    grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
    grouped_reducescatter, grouped_reducescatter_async, join, poll, reducescatter,
    reducescatter_async, sparse_allreduce_async, synchronize,
)
from tandem.torch.optimizer import DistributedOptimizer  # noqa: F401
from tandem.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set,
)
from tandem.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401


# ------------------------------------------------------- what this build has

def gpu_available():
    """True when CUDA tensors can go through Tandem in this process: the
    engine's GPU path is usable (driver, GPU, CUDA runtime and NCCL found)
    and torch has CUDA. The engine's reason: tandem.torch.gpu_status()."""
    return _built.gpu_status()[0] and _torch.cuda.is_available()


# hvd.elastic: run, TorchState, ElasticSampler (docs/elastic.md), on the
# submodules above (never on this package: no import cycle).
from tandem.torch import elastic  # noqa: E402,F401

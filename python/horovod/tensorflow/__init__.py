"""``horovod.tensorflow`` on Tandem: the same names, backed by tandem.tensorflow."""

from tandem.tensorflow import *  # noqa: F401,F403
from tandem.tensorflow import (  # noqa: F401 (names star-import skips or scripts reach for)
    _allreduce, _grouped_allreduce, _grouped_reducescatter, _make_allreduce_grads_fn,
    _reducescatter, allgather, allgather_object, allreduce, alltoall, barrier, broadcast,
    broadcast_, broadcast_global_variables, broadcast_object, broadcast_object_fn,
    broadcast_variables, ccl_built, check_num_rank_power_of_2, Compression, cross_rank,
    cross_size, cuda_built, ddl_built, DistributedGradientTape, DistributedOptimizer,
    gloo_built, gloo_enabled, gpu_available, grouped_allgather, grouped_allreduce,
    grouped_reducescatter, handle_average_backwards_compatibility, init, is_homogeneous,
    is_initialized, join, local_rank, local_rank_op, local_size, local_size_op, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, PartialDistributedGradientTape,
    process_set_included_op, rank, rank_op, reducescatter, rocm_built, shutdown, size,
    size_op, start_timeline, stop_timeline,
)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

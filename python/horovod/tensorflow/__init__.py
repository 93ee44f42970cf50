"""``horovod.tensorflow`` on Tandem: the same names, backed by tandem.tensorflow.

Horovod's ``hvd.DistributedOptimizer`` takes TF1 and Keras optimizers alike;
tandem.tensorflow sits below Keras and wraps only the former, so the choice
is made here, in the shim, where both layers may be reached.
"""

from tandem.tensorflow import *  # noqa: F403
from tandem.tensorflow import (  # noqa: F401 (names star-import skips or scripts reach for)
    _allreduce, _cache, _executing_eagerly, _grouped_allreduce, _grouped_reducescatter,
    _make_allreduce_grads_fn, _make_subgraph, refs_to_vars, vars_to_refs,
    _reducescatter, allgather, allgather_object, allreduce, alltoall, barrier, broadcast,
    broadcast_, broadcast_global_variables, broadcast_object, broadcast_object_fn,
    broadcast_variables, ccl_built, check_num_rank_power_of_2, Compression, cross_rank,
    cross_size, cuda_built, ddl_built, DistributedGradientTape, gloo_built, gloo_enabled,
    gpu_available, grouped_allgather, grouped_allreduce, grouped_reducescatter,
    handle_average_backwards_compatibility, init, is_homogeneous, is_initialized, join,
    local_rank, local_rank_op, local_size, local_size_op, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, PartialDistributedGradientTape,
    process_set_included_op, rank, rank_op, reducescatter, rocm_built, shutdown, size,
    size_op, start_timeline, stop_timeline,
)
from tandem import tensorflow as _frontend


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="",
                         device_sparse="", compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=_frontend.Average,
                         gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=_frontend.global_process_set,
                         scale_local_gradients=True):
    """Horovod's DistributedOptimizer: a tf.compat.v1.train.Optimizer is
    wrapped by tandem.tensorflow, a Keras optimizer by
    horovod.tensorflow.keras (as Horovod does)."""
    if _frontend.is_legacy_optimizer(optimizer):
        return _frontend.DistributedOptimizer(
            optimizer, name=name, use_locking=use_locking, device_dense=device_dense,
            device_sparse=device_sparse, compression=compression,
            sparse_as_dense=sparse_as_dense, backward_passes_per_step=backward_passes_per_step,
            op=op, gradient_predivide_factor=gradient_predivide_factor,
            average_aggregated_gradients=average_aggregated_gradients, num_groups=num_groups,
            groups=groups, process_set=process_set, scale_local_gradients=scale_local_gradients)
    if gradient_predivide_factor != 1.0 and op != _frontend.Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op == _frontend.Adasum:
        raise ValueError("op == Adasum is not supported yet with Keras")
    import horovod.tensorflow.keras as hvd_keras
    return hvd_keras.DistributedOptimizer(
        optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
        compression=compression, sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor,
        backward_passes_per_step=backward_passes_per_step,
        average_aggregated_gradients=average_aggregated_gradients, num_groups=num_groups,
        groups=groups, process_set=process_set, scale_local_gradients=scale_local_gradients)


def __getattr__(name):  # PEP 562: hvd.elastic and hvd.SyncBatchNormalization load on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    if name == "SyncBatchNormalization":  # Keras: not loaded by importing horovod.tensorflow
        from horovod.tensorflow.sync_batch_norm import SyncBatchNormalization
        return SyncBatchNormalization
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

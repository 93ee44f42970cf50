"""The horovod.tensorflow API on libtandem (``import tandem.tensorflow as hvd``).

Nothing here is compiled against TensorFlow: collectives are
``tf.numpy_function`` ops in graphs and DLPack calls eagerly (_bridge.py),
over the framework-neutral core (tandem._arrays). Differences from Horovod
are listed in docs/tensorflow.md; everything named here behaves as Horovod
documents it.
"""

import tensorflow as tf

from tandem import _ops
from tandem import errors as _engine_errors
from tandem._basics import (  # noqa: F401
    cross_rank, cross_size, init, is_homogeneous, is_initialized, local_rank, local_size,
    rank, shutdown, size, start_timeline, stop_timeline,
)
from tandem._built import (  # noqa: F401
    ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, gpu_status, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rocm_built,
)
from tandem.errors import TandemError  # noqa: F401
from tandem.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set,
)
from tandem.tensorflow import _bridge
from tandem.tensorflow.compression import Compression
from tandem.tensorflow.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables,
)
from tandem.tensorflow.gradient_tape import (  # noqa: F401
    DistributedGradientTape, GradientReducer, PartialDistributedGradientTape,
    _make_allreduce_grads_fn,
)
from tandem.tensorflow.util import (  # noqa: F401 (Horovod exports them here too)
    _cache, _executing_eagerly, _make_subgraph, refs_to_vars, vars_to_refs,
)
from tandem.tensorflow.mpi_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, Sum,
    _allreduce, _grouped_allreduce, _grouped_reducescatter, _reducescatter, allgather,
    alltoall, barrier, broadcast, broadcast_, grouped_allgather, join, local_rank_op,
    local_size_op, process_set_included_op, rank_op, size_op,
)


def gpu_available(ext_base_name="tensorflow", verbose=False):
    """Horovod's meaning, "this framework's ops have a GPU path" (Horovod's
    argument names the framework; its tests pass 'tensorflow'): False, since
    tandem.tensorflow reduces tensors that live on a GPU through host memory
    (TensorFlow copies them; docs/tensorflow.md). Ask horovod.torch about
    torch. gpu_status() gives the engine's own GPU answer."""
    return False


def handle_average_backwards_compatibility(op, average):
    """Horovod's (op, average) rule: the deprecated ``average`` wins when
    given (with Horovod's deprecation warning); neither means Average."""
    return _ops.resolve_op(op, average, "allreduce")


def check_num_rank_power_of_2(num_rank):
    return num_rank > 0 and (num_rank & (num_rank - 1)) == 0


# ------------------------------------------------------------------ allreduce

def _check_sparse_op(op, prescale_factor, postscale_factor):
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not support sparse tensors; "
                                  "pass sparse_as_dense=True")
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with "
                                  "tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with "
                                  "tf.IndexedSlices")


@_bridge.no_autograph
def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """Reduces a tf.Tensor (or tf.Variable) over the ranks, Average by
    default. A tf.IndexedSlices is allgathered instead (values and indices,
    one op) and, for Average, its values divided by the set size, as Horovod
    does. Differentiable. ``device_*`` and ``ignore_name_scope`` are accepted
    and unused."""
    if isinstance(tensor, tf.IndexedSlices) and op == Adasum:
        _check_sparse_op(op, prescale_factor, postscale_factor)  # Horovod's NotImplementedError
    op = _ops.resolve_op(op, average, "allreduce")
    if isinstance(tensor, tf.IndexedSlices):
        _check_sparse_op(op, prescale_factor, postscale_factor)
        values, indices = grouped_allgather([tensor.values, tensor.indices], name=name,
                                            process_set=process_set)
        if op == Average:
            values = values / tf.cast(process_set.size(), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = _allreduce(compressed, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, process_set=process_set)
    return compression.decompress(reduced, ctx)


@_bridge.no_autograph
def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of every tensor of the list as one engine operation (dense
    tensors) plus one allgather of the tf.IndexedSlices among them, in one op."""
    if not tensors:
        return tensors
    if op == Adasum and any(isinstance(t, tf.IndexedSlices) for t in tensors):
        _check_sparse_op(op, prescale_factor, postscale_factor)  # Horovod's NotImplementedError
    op = _ops.resolve_op(op, average, "grouped_allreduce")
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    out = [None] * len(tensors)
    if sparse:
        _check_sparse_op(op, prescale_factor, postscale_factor)
        gathered = grouped_allgather([p for i in sparse for p in (tensors[i].values,
                                                                   tensors[i].indices)],
                                     name=None if name is None else name + ".sparse",
                                     process_set=process_set)
        for k, i in enumerate(sparse):
            values, indices = gathered[2 * k], gathered[2 * k + 1]
            if op == Average:
                values = values / tf.cast(process_set.size(), values.dtype)
            out[i] = tf.IndexedSlices(values, indices, dense_shape=tensors[i].dense_shape)
    if dense:
        pairs = [compression.compress(tf.convert_to_tensor(tensors[i])) for i in dense]
        reduced = _grouped_allreduce([p[0] for p in pairs], name=name, op=op,
                                     prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor, process_set=process_set)
        for i, r, (_, ctx) in zip(dense, reduced, pairs):
            out[i] = compression.decompress(r, ctx)
    return out


@_bridge.no_autograph
def reducescatter(tensor, device_dense="", compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces over the set (Average by default) and scatters the first
    dimension: rank r of the set gets rows // n rows, one more when
    r < rows % n. Differentiable."""
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    out = _reducescatter(compressed, name=name, op=op, process_set=process_set,
                         prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    return compression.decompress(out, ctx)


@_bridge.no_autograph
def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None):
    if not tensors:
        return tensors
    pairs = [compression.compress(tf.convert_to_tensor(t)) for t in tensors]
    outs = _grouped_reducescatter([p[0] for p in pairs], name=name, op=op,
                                  process_set=process_set, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor)
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, pairs)]


# ------------------------------------------------------- TF1 global variables

@_bridge.no_autograph
def broadcast_global_variables(root_rank):
    """Broadcasts tf.compat.v1.global_variables() from root_rank (TF1 graph
    mode only, as in Horovod; eagerly, use broadcast_variables)."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution. "
            "Please use `hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


_SessionRunHook = getattr(getattr(tf.compat.v1, "train", None), "SessionRunHook", None)

if _SessionRunHook is not None:
    class BroadcastGlobalVariablesHook(_SessionRunHook):
        """TF1 SessionRunHook that broadcasts every global variable from
        root_rank once the session is created."""

        def __init__(self, root_rank, device=""):
            super().__init__()
            self.root_rank = root_rank
            self.bcast_op = None
            self.device = device

        def begin(self):
            if not self.bcast_op or self.bcast_op.graph != tf.compat.v1.get_default_graph():
                self.bcast_op = broadcast_global_variables(self.root_rank)

        def after_create_session(self, session, coord):
            session.run(self.bcast_op)


# ------------------------------------------------------- DistributedOptimizer

_LegacyOptimizer = getattr(getattr(tf.compat.v1, "train", None), "Optimizer", None)

if _LegacyOptimizer is not None:
    class _DistributedOptimizer(_LegacyOptimizer):
        """A tf.compat.v1 optimizer whose compute_gradients reduces the
        gradients over the ranks (one op for all of them)."""

        def __init__(self, optimizer, name=None, use_locking=False,
                     compression=Compression.none, sparse_as_dense=False, op=Average,
                     gradient_predivide_factor=1.0, groups=None,
                     process_set=global_process_set):
            if name is None:
                name = "Distributed{}".format(type(optimizer).__name__)
            super().__init__(name=name, use_locking=use_locking)
            self._optimizer = optimizer
            self._reducer = GradientReducer(compression, sparse_as_dense, op,
                                            gradient_predivide_factor, groups, process_set)

        def compute_gradients(self, *args, **kwargs):
            pairs = self._optimizer.compute_gradients(*args, **kwargs)
            grads, variables = zip(*pairs) if pairs else ((), ())
            return list(zip(self._reducer(list(grads), list(variables)), variables))

        def apply_gradients(self, grads_and_vars, global_step=None, name=None):
            return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                                   name=name)

        def get_slot(self, *args, **kwargs):
            return self._optimizer.get_slot(*args, **kwargs)

        def get_slot_names(self, *args, **kwargs):
            return self._optimizer.get_slot_names(*args, **kwargs)

        def variables(self, *args, **kwargs):
            return self._optimizer.variables(*args, **kwargs)


@_bridge.no_autograph
def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="",
                         device_sparse="", compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """Wraps a tf.compat.v1.train.Optimizer so that gradients are reduced
    over the ranks. Keras optimizers are tandem.keras's (horovod.tensorflow's
    DistributedOptimizer sends them there, as Horovod's does): this frontend
    sits below Keras and never imports it."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    groups = _ops.groups_from(num_groups, groups)
    if is_legacy_optimizer(optimizer):
        if op == Adasum:
            # Horovod's is a delta optimizer (each rank steps, the steps are
            # combined); reducing the gradients with Adasum would not be it.
            raise _engine_errors.make("TANDEM_ERR_UNSUPPORTED",
                                      "DistributedOptimizer(op=hvd.Adasum) for a tf.compat.v1 "
                                      "optimizer is not implemented by Tandem; use "
                                      "DistributedGradientTape(op=hvd.Adasum), or Adasum's "
                                      "optimizer in horovod.torch")
        if backward_passes_per_step != 1:
            raise _engine_errors.make("TANDEM_ERR_UNSUPPORTED",
                               "DistributedOptimizer(backward_passes_per_step=%d) for a "
                               "tf.compat.v1 optimizer is not implemented by Tandem; use a "
                               "Keras optimizer (horovod.tensorflow.keras) or accumulate "
                               "gradients yourself" % backward_passes_per_step)
        return _DistributedOptimizer(optimizer, name, use_locking, compression,
                                     sparse_as_dense, op, gradient_predivide_factor, groups,
                                     process_set)
    raise _engine_errors.make(
        "TANDEM_ERR_INVALID_ARGUMENT",
        "tandem.tensorflow.DistributedOptimizer wraps tf.compat.v1.train optimizers; %s is "
        "wrapped by tandem.keras.DistributedOptimizer (horovod.tensorflow.DistributedOptimizer "
        "and horovod.tensorflow.keras.DistributedOptimizer choose it for you)"
        % type(optimizer).__name__)


def is_legacy_optimizer(optimizer):
    """Whether ``optimizer`` is a tf.compat.v1.train.Optimizer (wrapped here)."""
    return _LegacyOptimizer is not None and isinstance(optimizer, _LegacyOptimizer)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

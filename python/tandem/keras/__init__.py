"""Horovod's Keras API on Keras 3 and libtandem (``import tandem.keras as hvd``).

The same module serves ``horovod.tensorflow.keras`` and ``horovod.keras``
(with Keras 3 there is one Keras, whatever the import path). The Keras
backend may be TensorFlow or torch: DistributedOptimizer reduces gradients
through the backend's Tandem frontend inside the train step, the callbacks
and value-level collectives work on host values for every backend.
Differences from Horovod are listed in docs/keras.md.
"""

import keras as _keras

if not str(getattr(_keras, "__version__", "0")).startswith("3."):
    raise ImportError(
        "tandem.keras serves Keras 3; this interpreter's keras is %s. Keras 2 is served by "
        "tandem.keras2, which horovod.keras and horovod.tensorflow.keras choose by "
        "themselves" % getattr(_keras, "__version__", "unknown"))

import numpy as _np

from tandem import _arrays, _names, _ops
from tandem import errors as _errors
from tandem._basics import (
    cross_rank, cross_size, init, is_homogeneous, is_initialized, local_rank, local_size,
    rank, shutdown, size, start_timeline, stop_timeline,
)
from tandem._built import (
    ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rocm_built,
)
from tandem._ops import Adasum, Average, Sum
from tandem.errors import TandemError
from tandem.process_sets import (
    ProcessSet, add_process_set, global_process_set, remove_process_set,
)
from tandem.keras import _compat, callbacks
from tandem.keras.compression import Compression
from tandem.keras.optimizer import (
    DistributedOptimizer, PartialDistributedOptimizer,
)
from tandem.keras.saving import load_model
from tandem import process_sets as _ps

_compat.install()

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "is_homogeneous", "start_timeline", "stop_timeline",
    "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built", "gloo_enabled",
    "nccl_built", "cuda_built", "rocm_built", "ccl_built", "ddl_built",
    "Average", "Sum", "Adasum", "Compression", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "TandemError",
    "DistributedOptimizer", "PartialDistributedOptimizer", "load_model", "callbacks",
    "allreduce", "allgather", "broadcast", "reducescatter", "broadcast_global_variables",
    "broadcast_variables",
]


# ------------------------------------------------ value-level collectives
# Horovod's keras module offers these on "tensor-compatible values" and
# returns the backend's tensors (eager); here they run on the host
# (tandem._arrays), whatever the backend.

def _tensor(array):
    return _keras.ops.convert_to_tensor(array)


def _numpy(value):
    return _np.asarray(_keras.ops.convert_to_numpy(value))


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none):
    """The reduction of ``value`` over every rank (Average by default), as a
    tensor of the Keras backend. ``compression`` is accepted for Horovod's
    signature; host values travel uncompressed."""
    del compression
    op = _ops.resolve_op(op, average, "allreduce")
    return _tensor(_arrays.start_allreduce(_names.given_or_unnamed(name, "keras.allreduce"),
                                           _numpy(value), op, float(prescale_factor),
                                           float(postscale_factor)).wait())


def allgather(value, name=None):
    """Every rank's ``value`` concatenated along the first dimension."""
    return _tensor(_arrays.start_allgather(_names.given_or_unnamed(name, "keras.allgather"),
                                           _numpy(value)).wait())


def broadcast(value, root_rank, name=None):
    """root_rank's ``value`` on every rank."""
    return _tensor(_arrays.start_broadcast(_names.given_or_unnamed(name, "keras.broadcast"),
                                           _numpy(value), root_rank).wait())


def reducescatter(value, name=None, op=Average):
    """The reduction of ``value`` with each rank keeping its share of the first
    dimension (the first ranks one more row when it does not divide)."""
    op = _ops.resolve_op(op, None, "reducescatter")
    return _tensor(_arrays.start_reducescatter(_names.given_or_unnamed(name, "keras.reducescatter"),
                                               _numpy(value), op).wait())


def broadcast_global_variables(root_rank):
    """Horovod's TF1 call over the graph's global variables: there is no such
    collection in TF2/Keras 3 (Horovod refuses it under eager execution too)."""
    raise _errors.make(
        "TANDEM_ERR_UNSUPPORTED",
        "broadcast_global_variables(%r): Keras 3 has no global variable collection; use "
        "hvd.callbacks.BroadcastGlobalVariablesCallback(%r) in model.fit, or "
        "hvd.callbacks.broadcast_variables(model.variables, %r)" % (root_rank, root_rank,
                                                                   root_rank))


def broadcast_variables(variables, root_rank, process_set=_ps.global_process_set):
    """Overwrites every rank's ``variables`` with root_rank's values."""
    callbacks.broadcast_variables(list(variables), root_rank, process_set)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

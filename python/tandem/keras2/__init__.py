"""Horovod's Keras API on Keras 2 (``tf_keras`` with ``TF_USE_LEGACY_KERAS=1``
on TensorFlow 2.16+, or TensorFlow <= 2.15's own ``keras``).

``horovod.tensorflow.keras`` and ``horovod.keras`` are this module when the
process's Keras is Keras 2 (tandem._which_keras), tandem.keras when it is
Keras 3. Keras 2 runs only on TensorFlow, so this module is written on
tandem.tensorflow: gradients are reduced by its GradientReducer inside the
train step, values by its ops. Behaviour follows horovod/_keras and
horovod/tensorflow/keras (docs/keras.md, "Keras 2").
"""

import tensorflow as tf

from tandem._which_keras import keras2 as _keras2

_keras = _keras2()
if _keras is None:
    raise ImportError("tandem.keras2 serves Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1, or "
                      "keras 2.x on TensorFlow <= 2.15); this process's keras is Keras 3: use "
                      "tandem.keras (horovod.keras and horovod.tensorflow.keras choose)")

from tandem import _ops  # noqa: E402
from tandem import tensorflow as _tf  # noqa: E402
from tandem.tensorflow import (  # noqa: E402
    init, shutdown, is_initialized, start_timeline, stop_timeline, size, local_size,
    cross_size, rank, local_rank, cross_rank, is_homogeneous, mpi_threads_supported,
    mpi_enabled, mpi_built, gloo_enabled, gloo_built, nccl_built, ddl_built, ccl_built,
    cuda_built, rocm_built, Average, Sum, Adasum, ProcessSet, global_process_set,
    add_process_set, remove_process_set, TandemError,
)
from tandem.tensorflow.compression import Compression  # noqa: E402
from tandem.keras2 import callbacks, optimizer as _optimizer  # noqa: E402
from tandem.keras_common import optimizer as _common  # noqa: E402

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "is_homogeneous", "start_timeline", "stop_timeline",
    "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built", "gloo_enabled",
    "nccl_built", "cuda_built", "rocm_built", "ccl_built", "ddl_built",
    "Average", "Sum", "Adasum", "Compression", "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "TandemError",
    "DistributedOptimizer", "PartialDistributedOptimizer", "load_model", "callbacks",
    "allreduce", "allgather", "broadcast", "reducescatter", "broadcast_global_variables",
]


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """A Keras 2 optimizer of ``optimizer``'s class whose gradients are
    reduced (``op``, Average by default) over ``process_set`` before they are
    applied, as horovod.tensorflow.keras.DistributedOptimizer.
    ``device_dense``/``device_sparse`` are accepted and unused (a tensor is
    reduced where it lives)."""
    del device_dense, device_sparse
    return _optimizer.create(_keras, optimizer, name=name, compression=compression,
                             sparse_as_dense=sparse_as_dense,
                             gradient_predivide_factor=gradient_predivide_factor, op=op,
                             backward_passes_per_step=backward_passes_per_step,
                             average_aggregated_gradients=average_aggregated_gradients,
                             groups=_ops.groups_from(num_groups, groups),
                             process_set=process_set,
                             scale_local_gradients=scale_local_gradients)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1, average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose ``local_layers`` keep their own gradients
    (not reduced; divided by the set size when scale_local_gradients)."""
    return _common.partial_distributed(DistributedOptimizer, locals(), _keras.layers.Layer,
                                       "tf.keras.layers.Layer")


def broadcast_global_variables(root_rank):
    """Horovod's TF1 call (refused under eager execution, as in Horovod)."""
    return _tf.broadcast_global_variables(root_rank)


# Value-level collectives: Horovod runs its TF op on tf.constant(value)
# eagerly and returns the tensor; so does this.

def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none):
    """The reduction of ``value`` over every rank (Average by default)."""
    return _tf.allreduce(tf.constant(value), name=name, average=average,
                         prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                         op=op, compression=compression)


def allgather(value, name=None):
    """Every rank's ``value`` concatenated along the first dimension."""
    return _tf.allgather(tf.constant(value), name=name)


def broadcast(value, root_rank, name=None):
    """root_rank's ``value`` on every rank."""
    return _tf.broadcast(tf.constant(value), root_rank, name=name)


def reducescatter(value, name=None, op=Average):
    """The reduction of ``value``, each rank keeping its share of the first
    dimension."""
    return _tf.reducescatter(tf.constant(value), name=name, op=op)


def _wrapper_class(name, base, compression):
    """What Keras deserializes an optimizer named ``name`` into: ``base``
    made distributed (Horovod registers such factories under each
    optimizer's name for load_model)."""

    def from_config(cls, config, custom_objects=None):
        return DistributedOptimizer(base.from_config(config), compression=compression)

    return type(name, (), {"from_config": classmethod(from_config)})


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False):
    """Loads a saved Keras 2 model whose optimizer comes back distributed
    (its state restored), as horovod.tensorflow.keras.load_model: every
    optimizer class of Keras (``keras.optimizers.legacy`` ones with
    ``legacy_opts``) and ``custom_optimizers`` are registered for Keras
    under their names, made distributed; ``custom_objects`` go to Keras
    unchanged and take precedence."""
    family = (_keras.optimizers.legacy.Optimizer if legacy_opts
              else _keras.optimizers.Optimizer)
    objects = {}
    classes = list(family.__subclasses__()) + list(custom_optimizers or ())
    for cls in classes:
        wrapper = _wrapper_class(cls.__name__, cls, compression)
        # Keras 2 looks an optimizer up by its lower-cased name in an .h5 or
        # SavedModel file (Horovod's keys) and by its class name in a .keras one.
        objects.setdefault(cls.__name__.lower(), wrapper)
        objects[cls.__name__] = wrapper
    objects.update(custom_objects or {})
    return _keras.models.load_model(filepath, custom_objects=objects)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

"""What tandem.keras does inside a Keras 3 train step, per backend.

DistributedOptimizer reduces gradients where Keras computes them: inside the
backend's train step (a ``tf.function`` under TensorFlow unless
``run_eagerly``; eager torch code under the torch backend). That needs an
operation of the backend itself, so this module hands the gradients to the
backend's Tandem frontend:

* ``tensorflow``: TensorFlow ops that call the engine from the graph
  (``tf.numpy_function``), usable eagerly and inside ``tf.function``.
* ``torch``: ``tandem.torch``'s grouped allreduce on the torch tensors
  themselves (CPU by pointer, CUDA through the engine's GPU path).

Other Keras backends (JAX, NumPy, OpenVINO) are refused with a clear error:
JAX's train step is a pure function (``stateless_apply``) with no place for a
collective Tandem could run.

Everything else in tandem.keras (callbacks, value-level collectives) runs
eagerly on host values and goes through ``_host`` for every backend.
"""

import keras

from tandem import _ops, errors
from tandem import process_sets as _ps
from tandem.keras import _host

SUPPORTED = ("tensorflow", "torch")


def name():
    return keras.backend.backend()


def check_supported(what):
    backend = name()
    if backend not in SUPPORTED:
        raise errors.make(
            "TANDEM_ERR_UNSUPPORTED",
            "%s: the Keras backend is %r; Tandem reduces gradients under the TensorFlow and "
            "torch backends (KERAS_BACKEND=tensorflow or torch). A JAX train step is a pure "
            "function (stateless_apply) with no place for a collective" % (what, backend))
    return backend


def is_sparse(grad):
    if name() == "tensorflow":
        import tensorflow as tf
        return isinstance(grad, tf.IndexedSlices)
    return bool(getattr(grad, "is_sparse", False))


def densify(grad):
    if name() == "tensorflow":
        import tensorflow as tf
        return tf.convert_to_tensor(grad)
    return grad.to_dense()


def grouped_allreduce(tensors, group_name, op, prescale, postscale, process_set):
    """The reduction of every tensor over the set, as one engine operation;
    new tensors of the same dtypes and shapes."""
    if not tensors:
        return []
    backend = check_supported("DistributedOptimizer")
    if backend == "tensorflow":
        return _tf_grouped_allreduce(tensors, group_name, op, prescale, postscale,
                                     process_set)
    from tandem.torch import mpi_ops
    return mpi_ops.grouped_allreduce(list(tensors), name=group_name, op=op,
                                     prescale_factor=prescale, postscale_factor=postscale,
                                     process_set=process_set)


def _tf_grouped_allreduce(tensors, group_name, op, prescale, postscale, process_set):
    import tensorflow as tf
    set_id = _ps.ident(process_set, "DistributedOptimizer")

    def reduce(*arrays):
        return _host.grouped_allreduce(list(arrays), group_name, op, prescale, postscale,
                                       set_id)

    outputs = tf.numpy_function(reduce, list(tensors), [t.dtype for t in tensors],
                                stateful=True, name="TandemGroupedAllreduce")
    if not isinstance(outputs, (list, tuple)):  # eagerly, one output comes back bare
        outputs = [outputs]
    for out, tensor in zip(outputs, tensors):
        out.set_shape(tensor.shape)
    return list(outputs)


def sparse_allreduce(grad, group_name, op, process_set):
    """Horovod's reduction of a sparse gradient (tf.IndexedSlices): every
    rank's values and indices gathered, values divided by the set size for
    Average. The result stays sparse."""
    import tensorflow as tf
    set_id = _ps.ident(process_set, "DistributedOptimizer")

    def gather(values, indices):
        out_values = _host.allgather(values, group_name + ".values", set_id)
        out_indices = _host.allgather(indices, group_name + ".indices", set_id)
        if op == _ops.Average:
            size = _host._collectives.process_set_size(set_id)
            out_values = (out_values / size).astype(values.dtype, copy=False)
        return out_values, out_indices

    values, indices = tf.numpy_function(gather, [grad.values, grad.indices],
                                        [grad.values.dtype, grad.indices.dtype],
                                        stateful=True, name="TandemSparseAllreduce")
    values.set_shape([None] + grad.values.shape[1:].as_list())
    indices.set_shape([None])
    return tf.IndexedSlices(values, indices, grad.dense_shape)


def scale(grad, factor):
    """``grad * factor``, keeping a sparse gradient sparse."""
    if name() == "tensorflow" and is_sparse(grad):
        import tensorflow as tf
        return tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
    return grad * factor

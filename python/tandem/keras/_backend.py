"""What tandem.keras does inside a Keras 3 train step, per backend.

DistributedOptimizer reduces gradients where Keras computes them: inside the
backend's train step (a ``tf.function`` under TensorFlow unless
``run_eagerly``; eager torch code under the torch backend). That needs an
operation of the backend itself, so this module hands the gradients to the
backend's Tandem frontend:

* ``tensorflow``: ``tandem.tensorflow``'s grouped allreduce, a TensorFlow op
  usable eagerly and inside ``tf.function`` (not under XLA: see _compat.py).
* ``torch``: ``tandem.torch``'s grouped allreduce on the torch tensors
  themselves (CPU by pointer, CUDA through the engine's GPU path).

Other Keras backends (JAX, NumPy, OpenVINO) are refused with a clear error:
JAX's train step is a pure function (``stateless_apply``) with no place for a
collective Tandem could run.

Everything else in tandem.keras (callbacks, value-level collectives) runs
eagerly on host values (NumPy) through the core's ``tandem._arrays``, the
same for every backend.
"""

import keras

from tandem import errors

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
        from tandem import tensorflow as tf_frontend
        return tf_frontend.grouped_allreduce(list(tensors), op=op, prescale_factor=prescale,
                                             postscale_factor=postscale,
                                             process_set=process_set, name=group_name)
    from tandem.torch import mpi_ops
    return mpi_ops.grouped_allreduce(list(tensors), name=group_name, op=op,
                                     prescale_factor=prescale, postscale_factor=postscale,
                                     process_set=process_set)


def sparse_allreduce(grad, group_name, op, process_set):
    """Horovod's reduction of a sparse gradient (tf.IndexedSlices): every
    rank's values and indices gathered, values divided by the set size for
    Average; the result stays sparse (tandem.tensorflow.allreduce)."""
    from tandem import tensorflow as tf_frontend
    return tf_frontend.allreduce(grad, op=op, process_set=process_set, name=group_name)


def scale(grad, factor):
    """``grad * factor``, keeping a sparse gradient sparse."""
    if name() == "tensorflow" and is_sparse(grad):
        import tensorflow as tf
        return tf.IndexedSlices(grad.values * factor, grad.indices, grad.dense_shape)
    return grad * factor

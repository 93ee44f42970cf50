"""Eager TensorFlow tensors as numpy arrays and back, without copies.

DLPack both ways: ``np.from_dlpack`` views a CPU tensor's own memory, and
``tf.experimental.dlpack.from_dlpack`` adopts an array's. bfloat16 travels
as its uint16 bits (DLPack has no numpy bfloat16; a bitcast shares the
buffer). Used eagerly and by the graph ops' callbacks, which get eager
tensors (_graph_ops.py).
"""

import numpy as np
import tensorflow as tf

from tandem import _arrays

_BFLOAT16 = tf.bfloat16.as_numpy_dtype


class _DLPackView:
    """What numpy's from_dlpack needs from a CPU tensor."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None, **_kwargs):
        return tf.experimental.dlpack.to_dlpack(self.tensor)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def on_cpu(tensor):
    device = tensor.device or ""
    return device == "" or ":CPU:" in device.upper()


def to_numpy(tensor):
    """A numpy view of an eager CPU tensor (no copy; read-only)."""
    if tensor.dtype == tf.bfloat16:
        return np.from_dlpack(_DLPackView(tf.bitcast(tensor, tf.uint16))).view(_BFLOAT16)
    return np.from_dlpack(_DLPackView(tensor))


def from_numpy(array, dtype):
    """An eager tensor of ``dtype`` over ``array``'s memory: no copy when the
    array has that type, is contiguous and 64-byte aligned, which
    tandem._arrays guarantees for what it allocates."""
    array = np.asarray(array)
    if array.dtype != dtype.as_numpy_dtype:
        array = array.astype(dtype.as_numpy_dtype)
    if not array.flags.c_contiguous or (array.size and array.ctypes.data % _arrays.ALIGN):
        # TensorFlow's kernels assume Eigen's alignment and abort on less; a
        # view into the middle of a result (a gradient's slice) is copied.
        aligned = _arrays.empty(array.shape, array.dtype)
        aligned[...] = array
        array = aligned
    if dtype == tf.bfloat16:
        bits = tf.experimental.dlpack.from_dlpack(array.view(np.uint16).__dlpack__())
        return tf.bitcast(bits, tf.bfloat16)
    if dtype == tf.bool and not _dlpack_has_bool():
        # TensorFlow before 2.16 knows no DLPack bool (type code 6): the
        # bytes come over as uint8 and one cast makes them bool (a copy).
        return tf.cast(tf.experimental.dlpack.from_dlpack(array.view(np.uint8).__dlpack__()),
                       tf.bool)
    return tf.experimental.dlpack.from_dlpack(array.__dlpack__())


_HAS_BOOL = []  # [answer] once asked: asking at import would start TensorFlow's
# context and fix its thread pools before the user's script can size them


def _dlpack_has_bool():
    if not _HAS_BOOL:
        try:
            tf.experimental.dlpack.from_dlpack(np.zeros((1,), np.bool_).__dlpack__())
            _HAS_BOOL.append(True)
        except (tf.errors.InvalidArgumentError, TypeError, ValueError):
            _HAS_BOOL.append(False)
    return _HAS_BOOL[0]

"""Gradient compression for tandem.keras (Horovod's Compression.none/.fp16):
tandem._compression's rules written with ``keras.ops``, so the same
compressor works on every backend and inside a compiled train step. Any
object with Horovod's protocol is accepted where a compression is expected,
e.g. horovod.tensorflow's ``Compression.fp16`` under the TensorFlow backend
or horovod.torch's under the torch backend.
"""

from keras import backend, ops

from tandem._compression import Compressor, NoneCompressor  # noqa: F401 (Horovod's names)
from tandem._compression import FP16Compressor as _FP16

_WIDER_FLOATS = ("float32", "float64", "bfloat16")


class FP16Compressor(_FP16):
    half = "float16"

    @staticmethod
    def wide_float(tensor):
        dtype = backend.standardize_dtype(tensor.dtype)
        return dtype if dtype in _WIDER_FLOATS else None

    @staticmethod
    def cast(tensor, dtype):
        return ops.cast(tensor, dtype)


class Compression:
    """``Compression.none`` and ``Compression.fp16``, as in Horovod."""
    none = NoneCompressor
    fp16 = FP16Compressor

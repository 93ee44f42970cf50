"""Gradient compression for tandem.keras (Horovod's Compression.none/.fp16).

Written with ``keras.ops``, so the same compressor works on every backend and
inside a compiled train step. Any object with Horovod's protocol
(``compress(tensor) -> (tensor, ctx)``, ``decompress(tensor, ctx)``) is
accepted where a compression is expected, e.g. horovod.tensorflow's
``Compression.fp16`` under the TensorFlow backend or horovod.torch's under
the torch backend.
"""

from keras import backend, ops


class Compressor:
    """Turns a tensor into what travels and back."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


_WIDER_FLOATS = ("float32", "float64", "bfloat16")


class FP16Compressor(Compressor):
    """Floating tensors travel as float16 (half the bytes of float32); other
    types travel unchanged. The engine accumulates float16 in float32 on the
    CPU path, so only the final rounding is lost."""

    @staticmethod
    def compress(tensor):
        dtype = backend.standardize_dtype(tensor.dtype)
        if dtype in _WIDER_FLOATS:
            return ops.cast(tensor, "float16"), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else ops.cast(tensor, ctx)


class Compression:
    """``Compression.none`` and ``Compression.fp16``, as in Horovod."""
    none = NoneCompressor
    fp16 = FP16Compressor

"""Gradient compression (Horovod's ``Compression.none`` and ``.fp16``), for
every frontend.

A compressor turns a tensor into what travels and back:
``compress(tensor) -> (tensor, ctx)`` and ``decompress(tensor, ctx)``, used
as classes (``hvd.Compression.fp16.compress(t)``), as in Horovod; any object
with that protocol is accepted where a compression is expected. The rules
live here; each frontend's ``compression`` module says only how to read a
tensor's type and cast it in its framework.
"""


class Compressor:
    """Turns a tensor into what travels and back."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Travels as it is."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Floating types wider than float16 (float32, float64, bfloat16) travel
    as float16, half the bytes of float32; other types travel unchanged. On
    the host the engine computes each float16 step in float32 and rounds it
    to float16, as Horovod's CPU kernels do; NCCL (torch CUDA tensors)
    reduces in float16, as Horovod with NCCL.

    A frontend subclasses it with ``wide_float(tensor)`` (the tensor's type
    when it is a float wider than float16, else None), ``cast(tensor,
    dtype)`` and ``half`` (its float16)."""

    half = None

    @staticmethod
    def wide_float(tensor):
        raise NotImplementedError

    @staticmethod
    def cast(tensor, dtype):
        raise NotImplementedError

    @classmethod
    def compress(cls, tensor):
        dtype = cls.wide_float(tensor)
        if dtype is None:
            return tensor, None
        return cls.cast(tensor, cls.half), dtype

    @classmethod
    def decompress(cls, tensor, ctx):
        return tensor if ctx is None else cls.cast(tensor, ctx)

"""Gradient compression for allreduce (Horovod's Compression.none / .fp16)."""

import torch


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


class FP16Compressor(Compressor):
    """Floating tensors travel as float16 (half the bytes). On the CPU path
    the engine accumulates float16 in float32, so only the final rounding is
    lost; on the GPU path NCCL reduces in float16 (as Horovod with NCCL)."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.to(torch.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor

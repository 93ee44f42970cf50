"""Gradient compression for allreduce (Horovod's Compression.none / .fp16):
tandem._compression's rules on torch tensors."""

import torch

from tandem._compression import Compressor, NoneCompressor  # noqa: F401 (Horovod's names)
from tandem._compression import FP16Compressor as _FP16


class FP16Compressor(_FP16):
    half = torch.float16

    @staticmethod
    def wide_float(tensor):
        dtype = tensor.dtype
        return dtype if dtype.is_floating_point and dtype != torch.float16 else None

    @staticmethod
    def cast(tensor, dtype):
        return tensor.to(dtype)


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor

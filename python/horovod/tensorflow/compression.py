"""``horovod.tensorflow.compression`` on Tandem."""

from tandem.tensorflow.compression import (  # noqa: F401
    Compression, Compressor, FP16Compressor, NoneCompressor,
)

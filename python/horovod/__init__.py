"""Horovod compatibility shim: ``import horovod.torch as hvd`` (and
``horovod.tensorflow``, ``horovod.tensorflow.keras``, ``horovod.keras``) runs
on Tandem.
"""

__version__ = "0.28.1+tandem"

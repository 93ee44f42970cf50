"""Horovod compatibility shim: ``import horovod.torch as hvd`` runs on Tandem.

Only the PyTorch binding exists; ``horovod.tensorflow`` and friends do not.
"""

__version__ = "0.28.1+tandem"

"""Horovod compatibility shim: ``import horovod.torch as hvd`` (and
``horovod.tensorflow``, ``horovod.tensorflow.keras``, ``horovod.keras``) runs
on Tandem.
"""

__version__ = "0.28.1+tandem"


def run(*args, **kwargs):
    """Horovod's Python launcher (horovod.runner.run): func on num_proc local
    ranks, the list of results by rank."""
    from horovod.runner import run as run_on_ranks
    return run_on_ranks(*args, **kwargs)

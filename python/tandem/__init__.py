"""Tandem: Horovod-style data-parallel training on Slurm, nothing to compile.

This package binds libtandem (the in-process collective engine) with ctypes.
Frameworks live in subpackages (``tandem.torch``); a ``horovod`` shim package
beside this one lets ``import horovod.torch as hvd`` scripts run unmodified.
"""

from tandem import _log

_log.configure()  # the "tandem" logger follows TANDEM_LOG / TANDEM_LOG_SUBSYS

from tandem._basics import (  # noqa: E402, F401 (after the logger; re-exported API)
    init, shutdown, is_initialized, rank, size, local_rank, local_size, cross_rank,
    cross_size, is_homogeneous, library_version, library_origin, build_info,
)
from tandem.errors import TandemError  # noqa: E402, F401
from tandem._collectives import straggler_report  # noqa: E402, F401
from tandem._collectives import autotune_state  # noqa: E402, F401

__version__ = "0.1.0"

"""Whether this process was started by an elastic launch, and telling the
membership service that it finished. Core, not tandem.elastic: init() in
tandem._basics registers the exit report for every script under an elastic
launch, also one that never imports hvd.elastic, and the core imports no
layer above it."""

import atexit
import ctypes
import sys
import threading

from tandem import _library


def elastic_launch():
    """True when the process was started by an elastic launch
    (srun --horovod=elastic, tandem-run --elastic)."""
    lib = _library.library()
    if not lib.has("tandem_elastic_enabled"):
        return False
    lib.declare("tandem_elastic_enabled", ctypes.c_int, [])
    return bool(lib.tandem_elastic_enabled())


def report_done():
    """Tells the membership service this process finished its work: its exit
    is then no failure (a process that exits without it has its node
    excluded from later generations, as Horovod blacklists the host of a
    failed worker). A no-op outside an elastic launch."""
    lib = _library.library()
    if not lib.has("tandem_elastic_done") or not elastic_launch():
        return
    lib.declare("tandem_elastic_done", ctypes.c_int, [])
    lib.tandem_elastic_done()


_exit_hook_lock = threading.Lock()
_exit_hook = False


def _at_exit():
    # An uncaught exception sets sys.last_value before atexit handlers run:
    # then the process failed, and says nothing.
    if getattr(sys, "last_value", None) is None:
        report_done()


def register_exit_hook():
    """At interpreter exit without an uncaught exception, report_done(): a
    script that ends normally under an elastic launch without using
    hvd.elastic.run is no failure either."""
    global _exit_hook
    with _exit_hook_lock:
        if not _exit_hook and elastic_launch():
            atexit.register(_at_exit)
            _exit_hook = True

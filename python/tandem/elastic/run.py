"""The elastic run loop (Horovod's run_fn, horovod/common/elastic.py)."""

import atexit
import ctypes
import functools
import sys
import threading

from tandem import _library
from tandem.elastic.notifications import elastic_launch, notification_manager
from tandem.errors import HorovodInternalError, HostsUpdatedInterrupt


def run_fn(func, reset):
    """Wraps ``func(state, ...)``: syncs the state, runs ``func``; on
    HorovodInternalError restores the last commit, on HostsUpdatedInterrupt
    keeps the state, and in both cases calls ``reset`` (leave the job, join
    its next generation), the state's reset callbacks, and runs again.
    ``reset`` raising (this process was removed from the job, the job
    failed) ends the run with that error."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        notification_manager.init()
        notification_manager.register_listener(state)
        skip_sync = False

        try:
            while True:
                try:
                    if not skip_sync:
                        state.sync()

                    result = func(state, *args, **kwargs)
                    report_done()
                    return result
                except HorovodInternalError:
                    state.restore()
                    skip_sync = False
                except HostsUpdatedInterrupt as e:
                    skip_sync = e.skip_sync

                reset()
                state.on_reset()
        finally:
            notification_manager.remove_listener(state)
    return wrapper


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

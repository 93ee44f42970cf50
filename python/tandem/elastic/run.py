"""The elastic run loop (Horovod's run_fn, horovod/common/elastic.py)."""

import functools

from tandem._elastic_launch import report_done
from tandem.elastic.notifications import notification_manager
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

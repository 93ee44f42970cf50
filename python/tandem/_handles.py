"""Horovod's integer handles over the core's Requests, for every frontend.

``*_async`` calls return an int; ``poll(handle)`` says whether it is done and
``synchronize(handle)`` waits, runs the frontend's finishing step (copies back,
casts, wraps the result in the framework's tensor type) and forgets the
handle, re-raising the operation's error if it failed.
"""

import itertools
import threading

from tandem import _ops, errors


class _Pending:
    __slots__ = ("requests", "finish")

    def __init__(self, requests, finish):
        self.requests = requests
        self.finish = finish  # () -> output, run once every request is done


_handles = {}
_lock = threading.Lock()
_ids = itertools.count(1)


def register(requests, finish):
    """A new handle for ``requests`` (core Requests) completed by ``finish``."""
    with _lock:
        handle = next(_ids)
        _handles[handle] = _Pending(requests, finish)
    return handle


def _pending(handle):
    with _lock:
        pending = _handles.get(handle)
    if pending is None:
        raise _ops.invalid("handle %r is unknown: it was never returned by an *_async call "
                           "of this process, or it was already synchronized" % (handle,))
    return pending


def poll(handle):
    """True when the operation behind ``handle`` is complete (synchronize will
    not block). An operation that failed counts as complete."""
    pending = _pending(handle)
    try:
        return all(request.test() for request in pending.requests)
    except errors.TandemError:
        return True


def synchronize(handle):
    """Waits for the operation and returns its output; raises its error.
    A handle this process does not know (never returned, or already
    synchronized) gives None, as Horovod's synchronize does."""
    with _lock:
        pending = _handles.get(handle)
    if pending is None:
        return None
    try:
        for request in pending.requests:
            request.wait()
        return pending.finish()
    finally:
        with _lock:
            _handles.pop(handle, None)

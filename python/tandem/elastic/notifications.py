"""Host-update notifications: a daemon thread ("tandem-hosts") waits on the
engine's connection to the membership service and hands each announcement
to the registered State objects, which queue it for their next commit.
Horovod's WorkerNotificationManager ran an HTTP service the driver called;
here the engine already holds the connection (tandem_elastic_wait_update)."""

import ctypes
import threading
from enum import IntFlag

from tandem import _library
from tandem._elastic_launch import elastic_launch


class HostUpdateResult(IntFlag):
    """Horovod's kinds of host update (horovod.runner.elastic.worker)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


# How long one wait in the engine lasts; the thread loops for the life of the
# process (a daemon: it never holds the interpreter up at exit).
_WAIT_MS = 1000


class WorkerNotificationManager(object):
    """Delivers host updates to listeners (State objects)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._thread = None
        self._listeners = set()

    def init(self, rendezvous_addr=None, rendezvous_port=None, nic=None, hostname=None,
             local_rank=None):
        """Starts the notification thread once, under an elastic launch (the
        arguments of Horovod's signature are not needed: the engine knows
        the service)."""
        with self._lock:
            if self._thread is not None or not elastic_launch():
                return
            self._thread = threading.Thread(target=self._watch, name="tandem-hosts", daemon=True)
            self._thread.start()

    def register_listener(self, listener):
        with self._lock:
            self._listeners.add(listener)

    def remove_listener(self, listener):
        with self._lock:
            self._listeners.remove(listener)

    def handle_hosts_updated(self, timestamp, update_res):
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.on_hosts_updated(timestamp, update_res)

    def _watch(self):
        lib = _library.library()
        lib.declare("tandem_elastic_wait_update", ctypes.c_int,
                    [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int)])
        from tandem import errors
        in_progress = errors.code_of("TANDEM_ERR_IN_PROGRESS")
        success = errors.code_of("TANDEM_SUCCESS")
        timestamp, kind = ctypes.c_int64(0), ctypes.c_int(0)
        while True:
            # ctypes releases the GIL for the wait.
            rc = lib.tandem_elastic_wait_update(_WAIT_MS, ctypes.byref(timestamp),
                                                ctypes.byref(kind))
            if rc == in_progress:
                continue
            if rc != success:
                return  # the service is gone: the next init says so
            self.handle_hosts_updated(timestamp.value, HostUpdateResult(kind.value))


notification_manager = WorkerNotificationManager()

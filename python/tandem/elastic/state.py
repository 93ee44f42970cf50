"""State objects of the elastic API, as Horovod 0.28 defines them
(horovod/common/elastic.py): what a training loop commits, restores after a
failure, and syncs from rank 0 when a generation starts."""

import queue

from tandem.elastic.notifications import HostUpdateResult
from tandem.errors import HostsUpdatedInterrupt


class State(object):
    """State representation used for tracking in memory state across workers.

    Args:
        bcast_object: Function used to broadcast a variable from rank 0 to the other workers.
        get_rank: Function that returns the current rank of this worker.
    """

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        # Read by Horovod's own test mains (elastic_*_main.py): a queue of
        # (timestamp, HostUpdateResult) from the notification thread, and the
        # timestamp of the last update acted on.
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Register callbacks that will be invoked following a reset event
        (worker added or removed), e.g. to scale the learning rate with the
        new number of workers."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        self._host_messages.put((timestamp, update_res))

    def commit(self):
        """Commits all modifications to state tracked by this object to host
        memory, then checks for host updates (raising HostsUpdatedInterrupt on
        every rank at once when processes asked to join). A commit copies the
        state (from the GPU too): commit every few batches rather than every
        one to trade work lost on a failure against time per batch."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt when a host update was announced.

        Rank 0's view is broadcast so that every rank raises at the same
        commit, whatever each one's notification thread has seen so far."""
        last_updated_timestamp = prev_timestamp = self._last_updated_timestamp
        all_update = HostUpdateResult.no_update
        while not self._host_messages.empty():
            timestamp, update = self._host_messages.get()
            if timestamp > last_updated_timestamp:
                last_updated_timestamp = timestamp
                all_update |= update

        prev_timestamp, self._last_updated_timestamp, all_update = \
            self._bcast_object((prev_timestamp, last_updated_timestamp, all_update))

        if self._last_updated_timestamp > prev_timestamp:
            raise HostsUpdatedInterrupt(all_update == HostUpdateResult.removed)

    def save(self):
        """Saves state to host memory."""
        raise NotImplementedError()

    def restore(self):
        """Restores the last committed state, undoing any uncommitted modifications."""
        raise NotImplementedError()

    def sync(self):
        """Synchronize state across workers."""
        raise NotImplementedError()

    def reset(self):
        """Reset objects and variables following a reset event (before synchronization)."""
        pass


class ObjectState(State):
    """State for simple Python objects: every keyword argument becomes an
    attribute, committed by value and broadcast from rank 0 by sync().

    Args:
        bcast_object: broadcast_object of the framework, used to sync the state dictionary.
        get_rank: rank function of the framework.
        kwargs: Properties to sync, exposed as attributes of the object.
    """

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._bcast_object = bcast_object
        self._saved_state = kwargs
        self._set_attrs()
        super(ObjectState, self).__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        new_state = {}
        for attr in self._saved_state.keys():
            new_state[attr] = getattr(self, attr)
        self._saved_state = new_state

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)

"""Process sets: collectives over a subset of the ranks (Horovod's API).

Each set has its own negotiation in the engine and runs concurrently with the
global set. Adding and removing are collective over every rank of the world,
in the same order everywhere.
"""

from tandem import _collectives, errors


class ProcessSet:
    """A set of global ranks. ``ranks=None`` is every rank (the global set).
    Usable in collectives once registered (``process_set_id`` set) by
    add_process_set or hvd.init(process_sets=[...])."""

    def __init__(self, ranks=None):
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)
        self.process_set_id = None

    def _id(self, what="this process set"):
        if self.process_set_id is None:
            raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                              "%r is not registered: call hvd.add_process_set(it) on every "
                              "rank first (%s)" % (self, what))
        return self.process_set_id

    def size(self):
        return _collectives.process_set_size(self._id())

    def rank(self):
        """This process's index in the set, or -1 when it is not a member."""
        return _collectives.process_set_rank(self._id())

    def included(self):
        return self.rank() >= 0

    def __eq__(self, other):
        if not isinstance(other, ProcessSet):
            return NotImplemented
        if self.process_set_id is not None and other.process_set_id is not None:
            return self.process_set_id == other.process_set_id
        return self.ranks == other.ranks

    def __hash__(self):
        return hash(tuple(self.ranks) if self.ranks is not None else None)

    def __repr__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s)" % (
            self.process_set_id, "all" if self.ranks is None else self.ranks)


global_process_set = ProcessSet()
global_process_set.process_set_id = 0


def add_process_set(process_set):
    """Registers a set (a ProcessSet or a list of global ranks) on every rank
    (collective, same order everywhere); returns the registered ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.ranks is None:
        raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                          "add_process_set: give the ranks of the set; every rank is the "
                          "global process set, which always exists")
    process_set.process_set_id = _collectives.add_process_set(process_set.ranks)
    return process_set


def remove_process_set(process_set):
    """Unregisters a set (collective); pending operations in it fail.
    Returns True, or False (as Horovod does, without a collective) for the
    global set, which is never removed, and a set that is not registered."""
    if process_set.process_set_id is None or process_set.process_set_id == 0:
        return False
    _collectives.remove_process_set(process_set.process_set_id)
    process_set.process_set_id = None
    return True


def ident(process_set, what):
    """The engine id of a set given to a collective. A set the engine does
    not know (removed, or an id set by hand) is refused here, at the call,
    as Horovod's ProcessSet.size() refuses it with ValueError when its
    hvd.allreduce reads the size; in a TensorFlow graph that is while the
    graph is built, not when it runs."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                          "%s: process_set must be a hvd.ProcessSet, got %s"
                          % (what, type(process_set).__name__))
    set_id = process_set._id(what)
    if set_id != 0:
        try:
            _collectives.process_set_size(set_id)
        except errors.TandemError as exc:
            if getattr(exc, "name", None) != "TANDEM_ERR_INVALID_ARGUMENT":
                raise
            raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                              "%s: %r is not a process set of this job (%s); register sets "
                              "with hvd.add_process_set" % (what, process_set, exc)) from None
    return set_id

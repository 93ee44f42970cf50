"""Small helpers shared by the framework bindings."""

from tandem import _collectives


def allgather_ints(values):
    """Flat list of every rank's ints, in rank order (blocking collective)."""
    return [v for row in _collectives.allgather_int64(values) for v in row]

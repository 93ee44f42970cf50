"""Python objects between ranks, for every frontend.

Objects travel as bytes: the frontend chooses how to serialize (``pickle`` by
default; tandem.torch uses torch.save so that tensors come back on this rank's
device). Names are derived from the caller's name, never from a counter of
this module, so ranks that call these in the same order agree on every name
whatever else they ran in other process sets.
"""

import ctypes
import pickle

from tandem import _basics, _collectives, _dtypes


def _dumps(obj):
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def _bytes_array(data):
    array = (ctypes.c_uint8 * max(1, len(data)))()
    ctypes.memmove(array, data, len(data))
    return array


def broadcast_bytes(data, root_rank, name, process_set=0):
    """Returns the root's bytes on every rank of ``process_set`` (an engine
    set id); ``data`` is read on the root only. ``root_rank`` is a global
    rank, as for every broadcast (a member of the set)."""
    root = _basics.rank() == root_rank
    length = (ctypes.c_int64 * 1)(len(data) if root else 0)
    _collectives.broadcast(name + ".size",
                           _collectives.Buffer(ctypes.addressof(length), _dtypes.INT64, (1,)),
                           ctypes.addressof(length), root_rank, process_set, keep=length).wait()
    count = length[0]
    payload = _bytes_array(data) if root else (ctypes.c_uint8 * max(1, count))()
    _collectives.broadcast(name + ".data",
                           _collectives.Buffer(ctypes.addressof(payload), _dtypes.UINT8, (count,)),
                           ctypes.addressof(payload), root_rank, process_set, keep=payload).wait()
    return ctypes.string_at(payload, count)


def allgather_bytes(data, name, process_set=0):
    """Every rank's bytes, in rank order of ``process_set`` (an engine set id)."""
    sizes = [row[0] for row in _collectives.allgather_int64([len(data)], process_set,
                                                           name=name + ".sizes")]
    payload = _bytes_array(data)
    holder = {}

    def make_output(_index, shape):
        holder["out"] = (ctypes.c_uint8 * max(1, shape[0]))()
        return ctypes.addressof(holder["out"]), shape[0]

    _collectives.allgather(name + ".data",
                           _collectives.Buffer(ctypes.addressof(payload), _dtypes.UINT8,
                                               (len(data),)),
                           make_output, process_set, keep=payload).wait()
    out, offset = [], 0
    for size in sizes:
        out.append(ctypes.string_at(ctypes.addressof(holder["out"]) + offset, size))
        offset += size
    return out


def broadcast_object(obj, root_rank, name, process_set=0, dumps=_dumps, loads=pickle.loads):
    """Returns root_rank's ``obj`` on every rank (the root gets its own object
    back, unserialized, as Horovod does). ``root_rank`` is a global rank."""
    root = _basics.rank() == root_rank
    data = broadcast_bytes(dumps(obj) if root else b"", root_rank, name, process_set)
    return obj if root else loads(data)


def allgather_object(obj, name, process_set=0, dumps=_dumps, loads=pickle.loads):
    """The list of every rank's ``obj``, in rank order."""
    return [loads(data) for data in allgather_bytes(dumps(obj), name, process_set)]

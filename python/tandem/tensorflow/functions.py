"""Variables and Python objects between ranks."""

import io
import pickle

import tensorflow as tf

from tandem import _objects
from tandem import process_sets as _ps
from tandem.tensorflow import _bridge, mpi_ops

try:  # Horovod serializes with cloudpickle (lambdas, local classes); use it when present
    import cloudpickle as _pickler
except ImportError:
    _pickler = pickle


@_bridge.no_autograph
def broadcast_variables(variables, root_rank, process_set=mpi_ops.global_process_set,
                        inplace=False):
    """Overwrites every rank's variables with root_rank's. All of them travel
    in one op (one negotiation). Eagerly it returns None once done; in a
    graph it returns the op that does it. ``inplace`` is accepted for
    Horovod's signature: the assignment always writes the variables in place."""
    variables = list(variables)
    if not variables:
        return None if tf.executing_eagerly() else tf.no_op()
    values = mpi_ops._grouped_broadcast(
        [_bridge.check_tensor(v, "broadcast_variables") for v in variables], root_rank, None,
        process_set, "broadcast_variables")
    if tf.executing_eagerly():
        for v, value in zip(variables, values):
            v.assign(value)
        return None
    return tf.group(*[v.assign(value) for v, value in zip(variables, values)])


def _dumps(obj):
    buffer = io.BytesIO()
    _pickler.dump(obj, buffer)
    return buffer.getvalue()


def _loads(data):
    return _pickler.loads(data)


def broadcast_object(obj, root_rank=0, session=None, name=None,
                     process_set=mpi_ops.global_process_set):
    """root_rank's ``obj`` on every rank of the set (any picklable object;
    the root gets its own object back). Runs at once, also in TF1 graph mode
    (``session`` is accepted and not needed)."""
    return _objects.broadcast_object(obj, root_rank, name or "broadcast_object",
                                     _ps.ident(process_set, "broadcast_object"),
                                     dumps=_dumps, loads=_loads)


def broadcast_object_fn(root_rank=0, session=None, name=None,
                        process_set=mpi_ops.global_process_set):
    """A function that broadcasts its argument from root_rank (Horovod's TF1
    helper; here it is broadcast_object with the arguments bound)."""
    def bcast(obj):
        return broadcast_object(obj, root_rank, session, name or "broadcast_object_fn",
                                process_set)
    return bcast


def allgather_object(obj, session=None, name=None, process_set=mpi_ops.global_process_set):
    """The list of every rank's ``obj``, in rank order of the set."""
    return _objects.allgather_object(obj, name or "allgather_object",
                                     _ps.ident(process_set, "allgather_object"),
                                     dumps=_dumps, loads=_loads)

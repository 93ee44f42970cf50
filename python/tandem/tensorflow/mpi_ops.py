"""horovod.tensorflow's collectives as TensorFlow operations on libtandem.

Each collective is one op (see _bridge.py: ``tf.numpy_function`` in graphs,
DLPack eagerly) that starts the engine operations and waits for them;
several tensors in one call (grouped allreduce, grouped allgather,
broadcast_variables, the gradient tape) are one op and one negotiation.

Gradients follow Horovod's TensorFlow conventions (horovod/tensorflow/
mpi_ops.py), registered with ``tf.custom_gradient`` so that they work under
``tf.GradientTape`` eagerly and in ``tf.function``:

* allreduce: the allreduce of the gradient with the same op and scales;
* allgather: this rank's rows of the gradient averaged over the set;
* broadcast: the gradient averaged over the set on the root, zero elsewhere;
* alltoall: the gradient sent back with the received splits;
* reducescatter: the allgather of the gradient, times the set size for Sum,
  times the pre- and postscale factors.
"""

import numpy as np
import tensorflow as tf

from tandem import _arrays, _basics, _collectives, _ops
from tandem import process_sets as _ps
from tandem._ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from tandem.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set,
)
from tandem.tensorflow import _bridge

try:  # whether any tape is recording (internal, guarded: only a shortcut)
    from tensorflow.python.eager import record as _record
except ImportError:  # pragma: no cover
    _record = None


def _differentiable(tensors):
    return any(t.dtype.is_floating or t.dtype.is_complex for t in tensors)


def _no_tape_records():
    """Eagerly, whether no GradientTape (or forward accumulator) is active, so
    that tf.custom_gradient's bookkeeping, a cost on every call, can be skipped."""
    if _record is None or not tf.executing_eagerly():
        return False
    return not _record.could_possibly_record()


def _with_gradient(forward, backward, tensors):
    """forward(*tensors) -> tensor or list; backward(*upstream) -> gradient(s)
    of the inputs. Integer and bool tensors get no gradient (as in TF)."""
    if not _differentiable(tensors) or _no_tape_records():
        return forward(*tensors)

    @tf.custom_gradient
    def op(*xs):
        out = forward(*xs)

        def grad(*upstream):
            return backward(*upstream)
        return out, grad
    return op(*tensors)


def _np_dtype(tf_dtype):
    return tf_dtype.as_numpy_dtype


def _check_reduction(tensor, op, what):
    _arrays.check_reduction(_np_dtype(tensor.dtype), op, what)


def _zeros_for_none(grads, like):
    return [tf.zeros_like(x) if g is None else g for g, x in zip(grads, like)]


# ------------------------------------------------------------------ allreduce

@_bridge.no_autograph
def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
               ignore_name_scope=False, process_set=global_process_set):
    """Reduces ``tensor`` over the ranks of the set (Sum by default, as
    Horovod's raw op). The public hvd.allreduce adds compression, sparse
    tensors and Horovod's Average default."""
    op = _ops.resolve_op(op, None, "allreduce")
    tensor = _bridge.check_tensor(tensor, "allreduce")
    if op == Adasum:
        _ops.check_adasum(_basics.size(), process_set, global_process_set)
    ps = _ps.ident(process_set, "allreduce")
    _check_reduction(tensor, op, "allreduce")
    prescale, postscale = float(prescale_factor), float(postscale_factor)

    def forward(x):
        engine_name = _bridge.name_for(name, "allreduce", ps)

        def start(arrays):
            pending = _arrays.start_allreduce(engine_name, arrays[0], op, prescale, postscale,
                                              ps)
            return lambda: [pending.wait()]
        return _bridge.call("allreduce", start, [x], [x.dtype], [x.shape])[0]

    def backward(dy):
        return _allreduce(dy, op=op, prescale_factor=prescale, postscale_factor=postscale,
                          process_set=process_set)
    return _with_gradient(forward, backward, [tensor])


@_bridge.no_autograph
def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       ignore_name_scope=False, process_set=global_process_set):
    """One engine operation for the list: negotiated, fused and completed
    together."""
    op = _ops.resolve_op(op, None, "grouped_allreduce")
    tensors = [_bridge.check_tensor(t, "grouped_allreduce") for t in tensors]
    if not tensors:
        return []
    if op == Adasum:
        _ops.check_adasum(_basics.size(), process_set, global_process_set)
    ps = _ps.ident(process_set, "grouped_allreduce")
    for t in tensors:
        _check_reduction(t, op, "grouped_allreduce")
    prescale, postscale = float(prescale_factor), float(postscale_factor)

    def forward(*xs):
        base = _bridge.name_for(name, "grouped_allreduce", ps)
        names = ["%s.%d" % (base, i) for i in range(len(xs))]

        def start(arrays):
            return _arrays.start_grouped_allreduce(names, arrays, op, prescale, postscale,
                                                   ps).wait
        return _bridge.call("grouped_allreduce", start, list(xs), [x.dtype for x in xs],
                            [x.shape for x in xs])

    def backward(*upstream):
        return _grouped_allreduce(_zeros_for_none(upstream, tensors), op=op,
                                  prescale_factor=prescale, postscale_factor=postscale,
                                  process_set=process_set)
    out = _with_gradient(forward, backward, tensors)
    return list(out)


# ------------------------------------------------------------------ allgather

def _gathered_shape(shape):
    return tf.TensorShape([None]).concatenate(shape[1:]) if shape.rank else shape


def _static_dim0(tensor):
    return tensor.shape[0] if tensor.shape.rank else None


def _allgather_backward(upstreams, inputs, process_set):
    """Gradient of (grouped) allgather: each gradient averaged over the set,
    then this rank's rows, found from every rank's first dimension (all in
    one op)."""
    ps = _ps.ident(process_set, "allgather")
    set_rank = process_set.rank()
    dims = tf.stack([tf.shape(x, out_type=tf.int64)[0] for x in inputs])
    grads = [tf.convert_to_tensor(g) for g in _zeros_for_none(upstreams, inputs)]
    base = _bridge.name_for(None, "allgather.grad", ps)

    def start(arrays):
        *gs, mine = arrays
        pendings = [_arrays.start_allreduce("%s.%d" % (base, i), g, Average, process_set=ps)
                    for i, g in enumerate(gs)]
        pendings.append(_arrays.start_allgather_sizes(base + ".dims", mine, ps))

        def finish():
            *reduced, sizes = _arrays.wait_all(pendings)
            out = []
            for i, r in enumerate(reduced):
                first = int(sizes[:set_rank, i].sum())
                out.append(np.ascontiguousarray(r[first:first + int(sizes[set_rank, i])]))
            return out
        return finish
    outs = _bridge.call("allgather_grad", start, grads + [dims], [g.dtype for g in grads],
                        [x.shape for x in inputs])
    return outs


@_bridge.no_autograph
def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's tensor along the first dimension, in rank
    order of the set; first dimensions may differ between ranks."""
    return grouped_allgather([tensor], name=name, process_set=process_set,
                             _what="allgather")[0]


@_bridge.no_autograph
def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set, _what="grouped_allgather"):
    """allgather of each tensor of the list, in one op."""
    tensors = [_bridge.check_tensor(t, _what) for t in tensors]
    if not tensors:
        return []
    ps = _ps.ident(process_set, _what)
    for t in tensors:
        if t.shape.rank == 0:
            raise _ops.invalid("%s: a 0-dim tensor cannot be concatenated; reshape it to [1] "
                               "(tf.reshape(t, [1]))" % _what)

    def forward(*xs):
        base = _bridge.name_for(name, _what, ps)
        names = [base] if len(xs) == 1 else ["%s.%d" % (base, i) for i in range(len(xs))]

        def start(arrays):
            pendings = [_arrays.start_allgather(n, a, ps) for n, a in zip(names, arrays)]
            return lambda: _arrays.wait_all(pendings)
        return _bridge.call(_what, start, list(xs), [x.dtype for x in xs],
                            [_gathered_shape(x.shape) for x in xs])

    def backward(*upstream):
        grads = _allgather_backward(upstream, tensors, process_set)
        return grads if len(grads) > 1 else grads[0]
    return list(_with_gradient(forward, backward, tensors))


# ------------------------------------------------------------------ broadcast

@_bridge.no_autograph
def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's tensor on every rank of the set (root_rank is a global rank)."""
    tensor = _bridge.check_tensor(tensor, "broadcast")
    return _grouped_broadcast([tensor], root_rank, name, process_set, "broadcast")[0]


def _grouped_broadcast(tensors, root_rank, name, process_set, what):
    ps = _ps.ident(process_set, what)
    root = int(root_rank)

    def forward(*xs):
        base = _bridge.name_for(name, what, ps)
        names = [base] if len(xs) == 1 else ["%s.%d" % (base, i) for i in range(len(xs))]

        def start(arrays):
            pendings = [_arrays.start_broadcast(n, a, root, ps) for n, a in zip(names, arrays)]
            return lambda: _arrays.wait_all(pendings)
        return _bridge.call(what, start, list(xs), [x.dtype for x in xs],
                            [x.shape for x in xs])

    def backward(*upstream):
        grads = [_broadcast_grad(g, root, process_set)
                 for g in _zeros_for_none(upstream, tensors)]
        return grads if len(grads) > 1 else grads[0]
    return list(_with_gradient(forward, backward, tensors))


def _broadcast_grad(grad, root_rank, process_set):
    reduced = _allreduce(grad, op=Average, process_set=process_set)
    if _basics.rank() != root_rank:
        return reduced * 0
    return reduced


@_bridge.no_autograph
def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Overwrites every rank's variables with root_rank's (one op for the
    list); returns their new values."""
    variables = list(variables)
    if not variables:
        return []
    values = _grouped_broadcast([_bridge.check_tensor(v, "broadcast_") for v in variables],
                                root_rank, name, process_set, "broadcast_")
    if tf.executing_eagerly():
        for v, value in zip(variables, values):
            v.assign(value)
        return [v.read_value() for v in variables]
    assigns = [v.assign(value) for v, value in zip(variables, values)]
    with tf.control_dependencies(assigns):
        return [tf.identity(v.read_value()) for v in variables]


# ------------------------------------------------------------------ alltoall

@_bridge.no_autograph
def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends rows [sum(splits[:r]), +splits[r]) of the first dimension to the
    r-th rank of the set (equal parts when splits is None) and returns what
    the others sent, in rank order; with ``splits`` also the rows received
    from each rank (int32)."""
    tensor = _bridge.check_tensor(tensor, "alltoall")
    ps = _ps.ident(process_set, "alltoall")
    if tensor.shape.rank == 0:
        raise _ops.invalid("alltoall: a 0-dim tensor cannot be split; reshape it to [1]")
    set_size = process_set.size()
    split_tensor = None
    if splits is not None:
        split_tensor = tf.reshape(tf.cast(tf.convert_to_tensor(splits), tf.int64), [-1])
    received = {}

    def forward(x):
        engine_name = _bridge.name_for(name, "alltoall", ps)
        inputs = [x] if split_tensor is None else [x, split_tensor]

        def start(arrays):
            s = arrays[1] if len(arrays) > 1 else None
            pending = _arrays.start_alltoall(engine_name, arrays[0], s, ps)
            return lambda: list(pending.wait())
        out, rsplits = _bridge.call("alltoall", start, inputs, [x.dtype, tf.int32],
                                    [_gathered_shape(x.shape), tf.TensorShape([set_size])])
        received["splits"] = rsplits
        return out

    def backward(dy):
        grad, _ = alltoall(dy, splits=received["splits"], process_set=process_set)
        return grad
    out = _with_gradient(forward, backward, [tensor])
    return (out, received["splits"]) if splits is not None else out


# ------------------------------------------------------------ reducescatter

def _scattered_shape(shape, set_size, set_rank):
    if not shape.rank:
        return shape
    rows = shape[0]
    if rows is None or set_rank < 0:
        return tf.TensorShape([None]).concatenate(shape[1:])
    mine = rows // set_size + (1 if set_rank < rows % set_size else 0)
    return tf.TensorShape([mine]).concatenate(shape[1:])


@_bridge.no_autograph
def _grouped_reducescatter(tensors, name=None, op=Sum, ignore_name_scope=False,
                           process_set=global_process_set, prescale_factor=1.0,
                           postscale_factor=1.0, _what="grouped_reducescatter"):
    op = _ops.resolve_op(op, None, _what)
    tensors = [_bridge.check_tensor(t, _what) for t in tensors]
    if not tensors:
        return []
    ps = _ps.ident(process_set, _what)
    for t in tensors:
        if t.shape.rank == 0:
            raise _ops.invalid("%s: a 0-dim tensor cannot be scattered; reshape it to [1]"
                               % _what)
        _check_reduction(t, op, _what)
    prescale, postscale = float(prescale_factor), float(postscale_factor)
    set_size, set_rank = process_set.size(), process_set.rank()

    def forward(*xs):
        base = _bridge.name_for(name, _what, ps)
        names = [base] if len(xs) == 1 else ["%s.%d" % (base, i) for i in range(len(xs))]

        def start(arrays):
            pendings = [_arrays.start_reducescatter(n, a, op, prescale, postscale, ps)
                        for n, a in zip(names, arrays)]
            return lambda: _arrays.wait_all(pendings)
        return _bridge.call(_what, start, list(xs), [x.dtype for x in xs],
                            [_scattered_shape(x.shape, set_size, set_rank) for x in xs])

    def backward(*upstream):
        scale = (set_size if op == Sum else 1) * prescale * postscale
        grads = [g if scale == 1.0 else g * tf.cast(scale, g.dtype)
                 for g in _zeros_for_none(upstream, tensors)]
        out = grouped_allgather(grads, process_set=process_set)
        return out if len(out) > 1 else out[0]
    return list(_with_gradient(forward, backward, tensors))


@_bridge.no_autograph
def _reducescatter(tensor, name=None, op=Sum, ignore_name_scope=False,
                   process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces over the set and scatters the first dimension: the r-th rank
    gets rows // n rows, one more when r < rows % n (Horovod's layout)."""
    return _grouped_reducescatter([tensor], name, op, ignore_name_scope, process_set,
                                  prescale_factor, postscale_factor, _what="reducescatter")[0]


# ------------------------------------------------------- join, barrier, facts

@_bridge.no_autograph
def join():
    """This rank has no more data: it takes part in the others' allreduces
    with nothing until every rank has joined. Returns the last rank to join
    (an int32 scalar tensor)."""
    def start(_arrays_in):
        request = _collectives.start_join()

        def finish():
            request.wait()
            return [np.asarray(request.join_result, dtype=np.int32)]
        return finish
    return _bridge.call("join", start, [], [tf.int32], [tf.TensorShape([])])[0]


@_bridge.no_autograph
def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called it (an op in graphs)."""
    ps = _ps.ident(process_set, "barrier")
    if tf.executing_eagerly():
        _collectives.barrier(ps)
        return None

    def start(_arrays_in):
        request = _collectives.start_barrier(ps)

        def finish():
            request.wait()
            return [np.asarray(0, dtype=np.int32)]
        return finish
    return _bridge.call("barrier", start, [], [tf.int32], [tf.TensorShape([])])[0]


def _fact_op(what, value_fn, name):
    if tf.executing_eagerly():
        return tf.constant(value_fn(), dtype=tf.int32, name=name)

    def start(_arrays_in):
        return lambda: [np.asarray(value_fn(), dtype=np.int32)]
    return _bridge.call(what, start, [], [tf.int32], [tf.TensorShape([])])[0]


@_bridge.no_autograph
def size_op(process_set_id=0, name=None):
    """The size of the set as an int32 scalar tensor, read when the op runs."""
    return _fact_op("size", lambda: _collectives.process_set_size(process_set_id), name)


@_bridge.no_autograph
def local_size_op(name=None):
    return _fact_op("local_size", _basics.local_size, name)


@_bridge.no_autograph
def rank_op(name=None):
    return _fact_op("rank", _basics.rank, name)


@_bridge.no_autograph
def local_rank_op(name=None):
    return _fact_op("local_rank", _basics.local_rank, name)


@_bridge.no_autograph
def process_set_included_op(process_set_id=0, name=None):
    """1 when this rank belongs to the set, else 0."""
    return _fact_op("process_set_included",
                    lambda: int(_collectives.process_set_rank(process_set_id) >= 0), name)

"""Collectives on numpy arrays, for frontends whose tensors reach numpy
without a copy (tandem.tensorflow: ``tf.numpy_function`` inside graphs,
DLPack eagerly; tandem.keras's host values). Framework-neutral: numpy in,
numpy out.

Every ``start_*`` call enqueues into the engine at once and returns a
:class:`Pending`; :func:`wait_all` waits for a list of them and returns their
results. Starting several operations before waiting lets the engine
negotiate and fuse them together (one cycle for a whole step's gradients).

The dtype rules (widening, complex pairs, integer scaling and Average, the
byte form of types the engine lacks) are tandem._dtype_rules', applied here
with numpy. bfloat16 is ml_dtypes' numpy type, which TensorFlow and JAX use.

Outputs are allocated 64-byte aligned: TensorFlow then adopts a returned
array without copying it (Eigen's alignment).
"""

import numpy as np

from tandem import _collectives, _dtype_rules, _ops, errors

ALIGN = 64


def dtype_name(dtype):
    """The name tandem._dtype_rules knows a numpy type by ("int16", "bfloat16")."""
    return np.dtype(dtype).name


def engine_dtype(dtype):
    """The engine's dtype for a numpy dtype it handles natively, else None."""
    return _dtype_rules.engine_dtype(dtype_name(dtype))


def empty(shape, dtype):
    """An uninitialised C-contiguous array whose data is ALIGN-byte aligned."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    count = 1
    for d in shape:
        count *= d
    nbytes = count * dtype.itemsize
    raw = np.empty(nbytes + ALIGN, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGN
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def _ptr(array):
    return array.ctypes.data if array.size else None


def _buffer(array, dtype, shape=None):
    return _collectives.Buffer(_ptr(array), dtype, array.shape if shape is None else shape)


def _check_array(array, what):
    if isinstance(array, np.generic):  # a 0-dim value (tf.numpy_function passes these)
        array = np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise _ops.invalid("%s expects a numpy array, got %s" % (what, type(array).__name__))
    if array.dtype.hasobject or array.dtype.itemsize == 0:
        raise _ops.invalid("%s: arrays of %s cannot be sent (strings and objects have no "
                           "fixed size); encode them as bytes (uint8) first"
                           % (what, array.dtype))
    if array.flags.c_contiguous:
        return array
    # (np.ascontiguousarray alone would turn a 0-dim array into shape [1])
    return np.ascontiguousarray(array).reshape(array.shape)


class Pending:
    """Operations started in the engine and what turns their buffers into the
    result. The buffers stay referenced here until every request is done."""

    __slots__ = ("requests", "_finish")

    def __init__(self, requests, finish):
        self.requests = list(requests)
        self._finish = finish

    def wait(self):
        return wait_all([self])[0]


def wait_all(pendings):
    """Waits for every request of every pending operation, then returns the
    list of their results. An error is raised only once all have completed
    (the engine may still be writing into the buffers of the others)."""
    first = None
    for pending in pendings:
        for request in pending.requests:
            try:
                request.wait()
            except errors.TandemError as exc:
                first = first or exc
    if first is not None:
        raise first
    return [pending._finish() for pending in pendings]


# --------------------------------------------------------------- reductions

def scale_truncating(array, factor):
    """``array * factor`` in float64, truncated toward zero into the array's
    integer type (Horovod's ScaleBuffer)."""
    return np.asarray(array.astype(np.float64) * factor).astype(array.dtype)


def truncating_divide(array, divisor):
    """``array / divisor`` rounded toward zero, exactly, in the array's own
    integer type (floor division, then one back toward zero where a negative
    quotient had a remainder; a float detour would round int64 sums)."""
    divisor = np.asarray(divisor, dtype=array.dtype)  # 0-d arrays keep their type
    quotient = np.floor_divide(array, divisor)
    if array.dtype.kind == "i":
        quotient = quotient + ((np.remainder(array, divisor) != 0) & (array < 0)).astype(
            array.dtype)
    return np.asarray(quotient, dtype=array.dtype)


class _Reduction:
    """One array through a reduction: its wire form, and the fix-ups the
    dtype rule asks for before and after the engine."""

    def __init__(self, array, op, prescale, postscale, process_set, what):
        self.array = array = _check_array(array, what)
        rule = self.rule = _dtype_rules.reduction(
            dtype_name(array.dtype), op, prescale, postscale,
            lambda: _collectives.process_set_size(process_set), what)
        wire = np.dtype(rule.wire)
        if rule.complex_parts:
            self.wire = array.reshape(-1).view(wire).reshape(array.shape + (2,))
            self.out = empty(array.shape, array.dtype)
            self.recv = self.out.reshape(-1).view(wire).reshape(array.shape + (2,))
        elif array.dtype == wire and rule.prescale is None:
            self.wire = array
            self.out = self.recv = empty(array.shape, array.dtype)
        else:  # widened or prescaled: reduced in place in a copy, narrowed after
            self.wire = self.recv = array.astype(wire)
            if rule.prescale is not None:
                self.wire = self.recv = scale_truncating(self.wire, rule.prescale)
            self.out = None

    def send_buffer(self):
        return _buffer(self.wire, self.rule.engine_dtype)

    def finish(self, got):
        """The result from ``got`` (the reduction in the wire type): integer
        fix-ups in the wire type (the mean of int16 values fits int16 even
        where their sum does not), then back to the array's type."""
        rule = self.rule
        if rule.postscale is not None:
            got = scale_truncating(got, rule.postscale)
        if rule.divide_by is not None:
            got = truncating_divide(got, rule.divide_by)
        if rule.complex_parts:
            return got.reshape(-1).view(self.array.dtype).reshape(got.shape[:-1])
        return got.astype(self.array.dtype, copy=False)

    def result(self):
        if self.rule.complex_parts:
            return self.out
        return self.finish(self.recv)


def check_reduction(dtype, op, what, prescale=1.0, postscale=1.0):
    """Raises what a reduction of ``dtype`` with ``op`` would raise, before
    any data exists (lets a frontend refuse at graph construction)."""
    _dtype_rules.reduction(dtype_name(dtype), op, prescale, postscale, lambda: 1, what)


def start_allreduce(name, array, op, prescale=1.0, postscale=1.0, process_set=0):
    plan = _Reduction(array, op, prescale, postscale, process_set, "allreduce")
    rule = plan.rule
    request = _collectives.allreduce(name, plan.send_buffer(), _ptr(plan.recv), rule.engine_op,
                                     rule.engine_prescale, rule.engine_postscale, process_set,
                                     keep=plan)
    return Pending([request], plan.result)


def start_grouped_allreduce(names, arrays, op, prescale=1.0, postscale=1.0, process_set=0):
    """One engine operation for the whole list: negotiated and completed as a
    unit, fused where the types agree."""
    plans = [_Reduction(a, op, prescale, postscale, process_set, "grouped_allreduce")
             for a in arrays]
    # One engine op and one pair of factors per group: integer arrays run as
    # Sum without factors (applied here), floating ones as given.
    kinds = {(p.rule.engine_op, p.rule.engine_prescale, p.rule.engine_postscale)
             for p in plans}
    if len(kinds) > 1:
        raise _ops.invalid("grouped_allreduce: Average or scale factors over a mix of integer "
                           "and floating arrays; make one group of each kind")
    engine_op, pre, post = kinds.pop() if kinds else (op, float(prescale), float(postscale))
    request = _collectives.grouped_allreduce(
        list(names), [p.send_buffer() for p in plans], [_ptr(p.recv) for p in plans],
        engine_op, pre, post, process_set, keep=plans)
    return Pending([request], lambda: [p.result() for p in plans])


# ------------------------------------------------------------ moving bytes

def _byte_form(array):
    """(engine dtype, engine shape) for the byte-moving collectives
    (tandem._dtype_rules.byte_form)."""
    return _dtype_rules.byte_form(dtype_name(array.dtype), array.shape, array.dtype.itemsize)


class _Outputs:
    """Arrays for engine-allocated results: make_output is called once the
    engine knows each shape (in the engine's dtype and shape)."""

    def __init__(self, dtype, shape_fn=None):
        self.dtype = np.dtype(dtype)
        self.shape_fn = shape_fn
        self.arrays = {}

    def make_output(self, index, shape):
        if self.shape_fn is not None:
            shape = self.shape_fn(shape)
        else:
            shape = _dtype_rules.from_byte_shape(dtype_name(self.dtype), shape)
        out = empty(shape, self.dtype)
        self.arrays[index] = out
        return _ptr(out), out.nbytes


def start_broadcast(name, array, root_rank, process_set=0):
    array = _check_array(array, "broadcast")
    out = empty(array.shape, array.dtype)
    dtype, shape = _byte_form(array)
    request = _collectives.broadcast(name, _buffer(array, dtype, shape), _ptr(out),
                                     int(root_rank), process_set, keep=(array, out))
    return Pending([request], lambda: out)


def start_allgather(name, array, process_set=0):
    array = _check_array(array, "allgather")
    if array.ndim == 0:
        raise _ops.invalid("allgather: a 0-dim array cannot be concatenated; reshape it to [1]")
    outputs = _Outputs(array.dtype)
    dtype, shape = _byte_form(array)
    request = _collectives.allgather(name, _buffer(array, dtype, shape), outputs.make_output,
                                     process_set, keep=array)
    return Pending([request], lambda: outputs.arrays[0])


def start_alltoall(name, array, splits=None, process_set=0):
    """Result: (output, received_splits as int32)."""
    array = _check_array(array, "alltoall")
    if array.ndim == 0:
        raise _ops.invalid("alltoall: a 0-dim array cannot be split; reshape it to [1]")
    if splits is not None:
        splits = [int(s) for s in np.asarray(splits).reshape(-1)]
    outputs = _Outputs(array.dtype)
    dtype, shape = _byte_form(array)
    request = _collectives.alltoall(name, _buffer(array, dtype, shape), splits,
                                    _collectives.process_set_size(process_set),
                                    outputs.make_output, process_set, keep=array)
    return Pending([request], lambda: (outputs.arrays[0],
                                       np.asarray(request.received_splits, dtype=np.int32)))


def start_reducescatter(name, array, op, prescale=1.0, postscale=1.0, process_set=0):
    """Rows of the first dimension are dealt as evenly as possible, the first
    ranks of the set taking one more (Horovod's layout)."""
    plan = _Reduction(array, op, prescale, postscale, process_set, "reducescatter")
    if plan.array.ndim == 0:
        raise _ops.invalid("reducescatter: a 0-dim array cannot be scattered; reshape it to [1]")
    outputs = _Outputs(plan.wire.dtype, shape_fn=tuple)
    rule = plan.rule
    request = _collectives.reducescatter(name, plan.send_buffer(), rule.engine_op,
                                         rule.engine_prescale, rule.engine_postscale,
                                         outputs.make_output, process_set, keep=plan)
    return Pending([request], lambda: plan.finish(outputs.arrays[0]))


def start_allgather_sizes(name, values, process_set=0):
    """Every rank's int64 list (all of the same length), as an array
    [set size, len(values)]."""
    send = np.asarray(values, dtype=np.int64).reshape(1, -1)
    return start_allgather(name, send, process_set)


__all__ = ["ALIGN", "Pending", "check_reduction", "dtype_name", "empty", "engine_dtype",
           "scale_truncating", "start_allgather", "start_allgather_sizes", "start_allreduce",
           "start_alltoall", "start_broadcast", "start_grouped_allreduce", "start_reducescatter",
           "truncating_divide", "wait_all"]

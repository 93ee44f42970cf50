"""Collectives on numpy arrays, for frontends whose tensors reach numpy
without a copy (tandem.tensorflow: ``tf.numpy_function`` inside graphs,
DLPack eagerly). Framework-neutral: numpy in, numpy out.

Every ``start_*`` call enqueues into the engine at once and returns a
:class:`Pending`; :func:`wait_all` waits for a list of them and returns their
results. Starting several operations before waiting lets the engine
negotiate and fuse them together (one cycle for a whole step's gradients).

Types, as in tandem.torch:

* uint8, int8, int32, int64, float16, bfloat16 (ml_dtypes' numpy type, which
  TensorFlow and JAX use), float32, float64, bool go to the engine as they are.
* Reductions: int16 and uint16 are widened to int32, uint32 to int64, and
  narrowed back (two's complement keeps Sum and Product exact modulo 2**bits,
  as native arithmetic would; Min and Max are unchanged by widening).
  complex64/128 are reduced as (real, imaginary) pairs, Sum and Average only.
  Average of integers is a Sum divided by the set size and truncated toward
  zero (Horovod scales integers by 1/size in double and converts back, so
  -3 averaged over 2 ranks is -1); Average of bool has no meaning and is
  refused.
* Broadcast, allgather, alltoall move bytes: any fixed-size type works
  (types the engine lacks travel as uint8 with a trailing byte dimension).

Outputs are allocated 64-byte aligned: TensorFlow then adopts a returned
array without copying it (Eigen's alignment).
"""

import numpy as np

from tandem import _collectives, _dtypes, _ops, errors

ALIGN = 64

_NATIVE = {
    np.dtype(np.uint8): _dtypes.UINT8, np.dtype(np.int8): _dtypes.INT8,
    np.dtype(np.int32): _dtypes.INT32, np.dtype(np.int64): _dtypes.INT64,
    np.dtype(np.float16): _dtypes.FLOAT16, np.dtype(np.float32): _dtypes.FLOAT32,
    np.dtype(np.float64): _dtypes.FLOAT64, np.dtype(np.bool_): _dtypes.BOOL,
}
_WIDENED = {np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint16): np.dtype(np.int32),
            np.dtype(np.uint32): np.dtype(np.int64)}
_COMPLEX_PARTS = {np.dtype(np.complex64): np.dtype(np.float32),
                  np.dtype(np.complex128): np.dtype(np.float64)}


def _is_bfloat16(dtype):
    # ml_dtypes.bfloat16, without importing ml_dtypes (not every user has it).
    return dtype.name == "bfloat16" and dtype.itemsize == 2


def engine_dtype(dtype):
    """The engine's dtype for a numpy dtype it handles natively, else None."""
    dtype = np.dtype(dtype)
    if _is_bfloat16(dtype):
        return _dtypes.BFLOAT16
    return _NATIVE.get(dtype)


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

class _Reduction:
    """One array through a reduction: its wire form, the engine op, and the
    fix-ups after (narrowing, the division of integer averages)."""

    def __init__(self, array, op, set_size, what):
        self.array = array = _check_array(array, what)
        dtype = array.dtype
        self.engine_op, self.divide_by = op, None
        native = engine_dtype(dtype)
        if native is not None:
            self.engine_dtype, self.wire = native, array
            self.out = empty(array.shape, dtype)
            self.recv = self.out
        elif dtype in _WIDENED:
            wide = _WIDENED[dtype]
            self.engine_dtype = _NATIVE[wide]
            self.wire = self.recv = array.astype(wide)  # reduced in place, narrowed after
            self.out = None
        elif dtype in _COMPLEX_PARTS:
            if op not in (_ops.Sum, _ops.Average):
                raise _ops.invalid("%s: %s of complex numbers has no meaning; only Sum and "
                                   "Average reduce %s" % (what, _ops.OP_NAMES[op], dtype))
            part = _COMPLEX_PARTS[dtype]
            self.engine_dtype = _NATIVE[part]
            self.wire = array.reshape(-1).view(part).reshape(array.shape + (2,))
            self.out = empty(array.shape, dtype)
            self.recv = self.out.reshape(-1).view(part).reshape(array.shape + (2,))
        else:
            raise _ops.invalid(
                "%s: arrays of %s cannot be reduced; supported: uint8, int8, int16, uint16, "
                "int32, uint32, int64, float16, bfloat16, float32, float64, bool, complex64, "
                "complex128" % (what, dtype))
        is_float = self.engine_dtype in (_dtypes.FLOAT16, _dtypes.BFLOAT16, _dtypes.FLOAT32,
                                         _dtypes.FLOAT64)
        if op == _ops.Average and not is_float:
            if self.engine_dtype == _dtypes.BOOL:
                raise _ops.invalid("%s: Average of a bool array has no meaning; use Sum (or) "
                                   "or Min (and)" % what)
            # The engine averages floating types only: integers are summed
            # and divided here, truncated toward zero as Horovod does.
            self.engine_op, self.divide_by = _ops.Sum, set_size

    def send_buffer(self):
        return _buffer(self.wire, self.engine_dtype)

    def result(self):
        # An integer average is divided in the wire type, before narrowing:
        # the mean of int16 values fits int16 even where their sum does not.
        out = self.recv if self.out is None else self.out
        if self.divide_by is not None:
            out = truncating_divide(out, self.divide_by)
        return out.astype(self.array.dtype, copy=False)


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


def check_reduction(dtype, op, what):
    """Raises what a reduction of ``dtype`` with ``op`` would raise, before
    any data exists (lets a frontend refuse at graph construction)."""
    _Reduction(np.empty((0,), dtype=dtype), op, 1, what)


def start_allreduce(name, array, op, prescale=1.0, postscale=1.0, process_set=0):
    plan = _Reduction(array, op, _collectives.process_set_size(process_set), "allreduce")
    request = _collectives.allreduce(name, plan.send_buffer(), _ptr(plan.recv), plan.engine_op,
                                     float(prescale), float(postscale), process_set, keep=plan)
    return Pending([request], plan.result)


def start_grouped_allreduce(names, arrays, op, prescale=1.0, postscale=1.0, process_set=0):
    """One engine operation for the whole list: negotiated and completed as a
    unit, fused where the types agree."""
    set_size = _collectives.process_set_size(process_set)
    plans = [_Reduction(a, op, set_size, "grouped_allreduce") for a in arrays]
    ops = {p.engine_op for p in plans}
    if len(ops) > 1:
        raise _ops.invalid("grouped_allreduce: Average over integer and floating arrays at "
                           "once; reduce them in separate groups")
    request = _collectives.grouped_allreduce(
        list(names), [p.send_buffer() for p in plans], [_ptr(p.recv) for p in plans],
        ops.pop() if ops else op, float(prescale), float(postscale), process_set, keep=plans)
    return Pending([request], lambda: [p.result() for p in plans])


# ------------------------------------------------------------ moving bytes

def _byte_form(array):
    """(engine dtype, engine shape) for the byte-moving collectives: the
    array's own type when the engine has it, else uint8 with one trailing
    dimension of the element size added. The engine then checks shapes in
    bytes, which agree exactly when the element shapes agree, and the first
    dimension, which allgather concatenates and alltoall's splits count,
    keeps its length (widening the last dimension instead would make a 1-D
    array's first dimension count bytes: a silent wrong alltoall)."""
    native = engine_dtype(array.dtype)
    shape = list(array.shape)
    if native is not None:
        return native, shape
    return _dtypes.UINT8, shape + [array.dtype.itemsize]


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
        elif engine_dtype(self.dtype) is None:
            shape = list(shape)[:-1]  # the byte dimension _byte_form added
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
    plan = _Reduction(array, op, _collectives.process_set_size(process_set), "reducescatter")
    if plan.array.ndim == 0:
        raise _ops.invalid("reducescatter: a 0-dim array cannot be scattered; reshape it to [1]")
    wire_dtype = plan.wire.dtype
    outputs = _Outputs(wire_dtype, shape_fn=tuple)

    def finish():
        got = outputs.arrays[0]
        dtype = plan.array.dtype
        if dtype in _COMPLEX_PARTS:
            return got.reshape(-1).view(dtype).reshape(got.shape[:-1])
        if plan.divide_by is not None:  # in the wire type, as in _Reduction.result
            got = truncating_divide(got, plan.divide_by)
        return got.astype(dtype, copy=False)
    request = _collectives.reducescatter(name, plan.send_buffer(), plan.engine_op,
                                         float(prescale), float(postscale),
                                         outputs.make_output, process_set, keep=plan)
    return Pending([request], finish)


def start_allgather_sizes(name, values, process_set=0):
    """Every rank's int64 list (all of the same length), as an array
    [set size, len(values)]."""
    send = np.asarray(values, dtype=np.int64).reshape(1, -1)
    return start_allgather(name, send, process_set)


__all__ = ["ALIGN", "Pending", "check_reduction", "empty", "engine_dtype", "start_allgather",
           "start_allgather_sizes", "start_allreduce", "start_alltoall", "start_broadcast",
           "start_grouped_allreduce", "start_reducescatter", "truncating_divide", "wait_all"]

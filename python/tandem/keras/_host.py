"""NumPy arrays through the core, for what tandem.keras does on the host.

Keras 3 hands callbacks host values whatever the backend: metric logs are
Python floats, and a variable's value converts to a NumPy array on every
backend. The callbacks (broadcast of the model's and optimizer's variables,
metric averaging) and the value-level ``hvd.allreduce(value)``-style helpers
therefore work on NumPy arrays, described to the engine as they are: one
backend-neutral path, no framework op. The per-step gradient reduction does
not come here: it runs inside the backend's train step (``_backend.py``).

Arrays are made C-contiguous first (a copy only where they are not); outputs
are fresh arrays. Reductions take the engine's dtypes plus int16 (widened to
int32 and narrowed back, exact modulo 2**16 as int16 arithmetic); Average of
integers is Sum followed by floor division, as Horovod does. Broadcast and
allgather move bytes, so every dtype travels.
"""

import numpy as np

from tandem import _collectives, _dtypes, _ops

_NATIVE = {
    np.dtype(np.uint8): _dtypes.UINT8, np.dtype(np.int8): _dtypes.INT8,
    np.dtype(np.int32): _dtypes.INT32, np.dtype(np.int64): _dtypes.INT64,
    np.dtype(np.float16): _dtypes.FLOAT16, np.dtype(np.float32): _dtypes.FLOAT32,
    np.dtype(np.float64): _dtypes.FLOAT64, np.dtype(np.bool_): _dtypes.BOOL,
}
try:  # Keras depends on ml_dtypes; bfloat16 arrays come from there.
    import ml_dtypes as _ml_dtypes
    _NATIVE[np.dtype(_ml_dtypes.bfloat16)] = _dtypes.BFLOAT16
except ImportError:  # pragma: no cover - Keras 3 always installs it
    pass
_WIDENED = {np.dtype(np.int16): np.dtype(np.int32)}


def _contiguous(array):
    """C-contiguous, copied only when it is not; keeps 0-dim arrays 0-dim
    (np.ascontiguousarray would make them 1-dim)."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy(order="C")


def _reduction_wire(array, op, what):
    """(array the engine reduces, engine dtype) for a reduction, or raises."""
    dtype = array.dtype
    if dtype in _NATIVE:
        return _contiguous(array), _NATIVE[dtype]
    if dtype in _WIDENED:
        wide = _WIDENED[dtype]
        return _contiguous(array.astype(wide)), _NATIVE[wide]
    raise _ops.invalid("%s: arrays of type %s cannot be reduced; supported: %s and int16"
                       % (what, dtype, ", ".join(str(d) for d in _NATIVE)))


def _buffer(array, engine_dtype):
    return _collectives.Buffer(array.ctypes.data, engine_dtype, array.shape)


def _byte_view(array):
    """The array's bytes as a uint8 array of shape (rows, row bytes), sharing
    memory (0-dim arrays are one row)."""
    array = _contiguous(array)
    rows = array.shape[0] if array.ndim else 1
    width = array.itemsize * (int(np.prod(array.shape[1:])) if array.ndim else 1)
    return array, array.reshape(-1).view(np.uint8).reshape(rows, width)


def grouped_allreduce(arrays, name, op=_ops.Average, prescale=1.0, postscale=1.0,
                      process_set=0):
    """Reduces every array over the set in one engine operation (one
    negotiation); returns new arrays of the input dtypes and shapes."""
    what = "allreduce '%s'" % name
    wires = []
    for array in arrays:
        wire, engine_dtype = _reduction_wire(np.asarray(array), op, what)
        if op == _ops.Average and wire.dtype.kind == "b":
            raise _ops.invalid("%s: Average of bool arrays has no meaning; use Sum, Min or "
                               "Max" % what)
        wires.append((wire, engine_dtype))
    integer_average = [op == _ops.Average and w.dtype.kind in "iu" for w, _ in wires]
    engine_op = _ops.Sum if any(integer_average) and all(integer_average) else op
    if any(integer_average) and not all(integer_average):
        # One engine op for the group: reduce integers apart from floats.
        ints = [i for i, flag in enumerate(integer_average) if flag]
        floats = [i for i, flag in enumerate(integer_average) if not flag]
        out = [None] * len(arrays)
        for indices, suffix in ((floats, ".f"), (ints, ".i")):
            part = grouped_allreduce([arrays[i] for i in indices], name + suffix, op, prescale,
                                     postscale, process_set)
            for i, value in zip(indices, part):
                out[i] = value
        return out
    outputs = [np.empty_like(w) for w, _ in wires]
    names = ["%s.%d" % (name, i) for i in range(len(wires))]
    if len(wires) == 1:
        names = [name]
    _collectives.grouped_allreduce(
        names, [_buffer(w, d) for w, d in wires], [o.ctypes.data for o in outputs],
        engine_op, prescale, postscale, process_set, keep=(wires, outputs)).wait()
    result = []
    for array, out, int_avg in zip(arrays, outputs, integer_average):
        if int_avg:
            out = out // _collectives.process_set_size(process_set)
        result.append(out.astype(np.asarray(array).dtype, copy=False))
    return result


def allreduce(array, name, op=_ops.Average, prescale=1.0, postscale=1.0, process_set=0):
    return grouped_allreduce([array], name, op, prescale, postscale, process_set)[0]


def broadcast(arrays, root_rank, name, process_set=0):
    """Root's arrays on every rank of the set (new arrays; the root gets its
    own values). Shapes and dtypes must agree across ranks: the engine checks
    each array's byte shape and fails every rank when they differ."""
    requests, outputs = [], []
    for index, array in enumerate(arrays):
        array = np.array(array, copy=True, order="C")
        holder, data = _byte_view(array)
        requests.append(_collectives.broadcast(
            "%s.%d" % (name, index), _buffer(data, _dtypes.UINT8), data.ctypes.data,
            root_rank, process_set, keep=(holder, data)))
        outputs.append(holder)
    first_error = None
    for request in requests:  # wait for all, so none is left in flight
        try:
            request.wait()
        except Exception as exc:  # noqa: BLE001 - re-raised below
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    return outputs


def allgather(array, name, process_set=0):
    """Every rank's array concatenated along the first dimension (which may
    differ between ranks), in rank order of the set."""
    array = _contiguous(np.asarray(array))
    if array.ndim == 0:
        raise _ops.invalid("allgather '%s': a 0-dim value has no first dimension to "
                           "concatenate along; reshape it to (1,)" % name)
    holder, data = _byte_view(array)
    out = {}

    def make_output(_index, shape):
        rows = shape[0] if shape else 0
        out["array"] = np.empty((rows,) + array.shape[1:], dtype=array.dtype)
        return out["array"].ctypes.data, out["array"].nbytes

    _collectives.allgather(name, _buffer(data, _dtypes.UINT8), make_output, process_set,
                           keep=(holder, data)).wait()
    return out["array"]


def reducescatter(array, name, op=_ops.Average, process_set=0):
    """The reduction of every rank's array, each rank keeping its share of the
    first dimension (the first ranks get one more row when it is uneven)."""
    array = np.asarray(array)
    what = "reducescatter '%s'" % name
    wire, engine_dtype = _reduction_wire(array, op, what)
    int_avg = op == _ops.Average and wire.dtype.kind in "iu"
    engine_op = _ops.Sum if int_avg else op
    out = {}

    def make_output(_index, shape):
        out["array"] = np.empty(shape, dtype=wire.dtype)
        return out["array"].ctypes.data, out["array"].nbytes

    _collectives.reducescatter(name, _buffer(wire, engine_dtype), engine_op, 1.0, 1.0,
                               make_output, process_set, keep=wire).wait()
    result = out["array"]
    if int_avg:
        result = result // _collectives.process_set_size(process_set)
    return result.astype(array.dtype, copy=False)

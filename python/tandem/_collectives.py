"""Named collectives through libtandem's negotiated runtime, framework-free.

This is the binding of the "runtime (named tensors)" section of tandem.h:
operations are enqueued by name, the engine's background thread agrees with
the other ranks on when each runs (any enqueue order), and a handle reports
completion. Frameworks describe their memory as a :class:`Buffer` (pointer,
engine dtype, shape) and get a :class:`Request` back.

Outputs whose size only negotiation knows (allgather, alltoall,
reducescatter) are allocated by the engine; when the request completes, the
caller's ``make_output(index, shape)`` returns the pointer of a buffer of that
shape and the bytes are copied there (the one copy the engine's ownership of
that memory requires).
"""

import ctypes
import json
import threading

from tandem import _dtypes, _library, _names, errors

_MAX_NDIM = 32
_handle_t = ctypes.c_int64


class _Tensor(ctypes.Structure):
    """tandem_tensor_t."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("input", ctypes.c_void_p),
        ("output", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
    ]


DEVICE_CPU = -1  # TANDEM_DEVICE_CPU
_GLOBAL = 0
_p = ctypes.POINTER
_RUNTIME_SIGNATURES = {
    "tandem_enqueue_allreduce": (ctypes.c_int, [_p(_Tensor), ctypes.c_int, ctypes.c_double,
                                                ctypes.c_double, ctypes.c_int, _p(_handle_t)]),
    "tandem_enqueue_grouped_allreduce": (ctypes.c_int, [_p(_Tensor), ctypes.c_int,
                                                        ctypes.c_int, ctypes.c_double,
                                                        ctypes.c_double, ctypes.c_int,
                                                        _p(_handle_t)]),
    "tandem_enqueue_broadcast": (ctypes.c_int, [_p(_Tensor), ctypes.c_int, ctypes.c_int,
                                                _p(_handle_t)]),
    "tandem_enqueue_allgather": (ctypes.c_int, [_p(_Tensor), ctypes.c_int, _p(_handle_t)]),
    "tandem_enqueue_alltoall": (ctypes.c_int, [_p(_Tensor), _p(ctypes.c_int64), ctypes.c_int,
                                               ctypes.c_int, _p(_handle_t)]),
    "tandem_enqueue_reducescatter": (ctypes.c_int, [_p(_Tensor), ctypes.c_int,
                                                    ctypes.c_double, ctypes.c_double,
                                                    ctypes.c_int, _p(_handle_t)]),
    "tandem_enqueue_barrier": (ctypes.c_int, [ctypes.c_int, _p(_handle_t)]),
    "tandem_enqueue_join": (ctypes.c_int, [ctypes.c_int, _p(_handle_t)]),
    "tandem_handle_poll": (ctypes.c_int, [_handle_t]),
    "tandem_handle_wait": (ctypes.c_int, [_handle_t, ctypes.c_double]),
    "tandem_handle_error": (ctypes.c_char_p, [_handle_t]),
    "tandem_handle_output_shape": (ctypes.c_int, [_handle_t, ctypes.c_int, _p(ctypes.c_int64),
                                                  ctypes.c_int, _p(ctypes.c_int)]),
    "tandem_handle_copy_output": (ctypes.c_int, [_handle_t, ctypes.c_int, ctypes.c_void_p,
                                                 ctypes.c_size_t]),
    "tandem_handle_received_splits": (ctypes.c_int, [_handle_t, _p(ctypes.c_int64),
                                                     ctypes.c_int]),
    "tandem_handle_join_result": (ctypes.c_int, [_handle_t, _p(ctypes.c_int)]),
    "tandem_handle_release": (None, [_handle_t]),
    "tandem_add_process_set": (ctypes.c_int, [_p(ctypes.c_int), ctypes.c_int,
                                              _p(ctypes.c_int)]),
    "tandem_remove_process_set": (ctypes.c_int, [ctypes.c_int]),
    "tandem_process_set_rank": (ctypes.c_int, [ctypes.c_int, _p(ctypes.c_int)]),
    "tandem_process_set_size": (ctypes.c_int, [ctypes.c_int, _p(ctypes.c_int)]),
    "tandem_process_set_ranks": (ctypes.c_int, [ctypes.c_int, _p(ctypes.c_int), ctypes.c_int,
                                                _p(ctypes.c_int)]),
    "tandem_start_timeline": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int]),
    "tandem_stop_timeline": (ctypes.c_int, []),
    "tandem_gpu_available": (ctypes.c_int, [_p(ctypes.c_char_p)]),
    "tandem_set_device_stream": (ctypes.c_int, [ctypes.c_void_p]),
    "tandem_runtime_counter": (ctypes.c_int, [ctypes.c_int, _p(ctypes.c_char_p),
                                              _p(ctypes.c_uint64)]),
    "tandem_straggler_report": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                               _p(ctypes.c_size_t)]),
    "tandem_autotune_state": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                             _p(ctypes.c_size_t)]),
}
_declared = False
_declare_lock = threading.Lock()


def _lib():
    global _declared
    lib = _library.library()
    if not _declared:
        with _declare_lock:
            if not _declared:
                for name, (restype, argtypes) in _RUNTIME_SIGNATURES.items():
                    lib.declare(name, restype, argtypes)
                _declared = True
    return lib


class Buffer:
    """Memory as the engine sees it: a pointer, a tandem dtype, a shape, and
    where it lives. ``device`` is DEVICE_CPU for host memory or a CUDA device
    index (``ptr`` is then a device pointer on that GPU); ``stream`` is the
    cudaStream_t (an int, 0 or None for the legacy default stream) the
    operation is ordered on, read for device buffers only."""

    __slots__ = ("ptr", "dtype", "shape", "device", "stream")

    def __init__(self, ptr, dtype, shape, device=DEVICE_CPU, stream=None):
        self.ptr, self.dtype, self.shape = ptr, dtype, tuple(int(d) for d in shape)
        self.device, self.stream = int(device), stream


def _device_stream(buffers):
    """The stream of the first device buffer, or False when all are host
    memory (then no stream is set: host tensors ignore it)."""
    for buffer in buffers:
        if buffer.device != DEVICE_CPU:
            return buffer.stream or 0
    return False


class _Described:
    """tandem_tensor_t for one Buffer, keeping its name and shape alive."""

    def __init__(self, name, buffer, output_ptr):
        if len(buffer.shape) > _MAX_NDIM:
            raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                              "'%s' has %d dimensions; at most %d are supported"
                              % (name, len(buffer.shape), _MAX_NDIM))
        self.name = name.encode()
        self.shape = (ctypes.c_int64 * max(1, len(buffer.shape)))(*buffer.shape)
        self.struct = _Tensor(self.name, buffer.ptr or None, output_ptr or None, buffer.dtype,
                              buffer.device, len(buffer.shape), self.shape)


def _in_progress():
    return errors.code_of("TANDEM_ERR_IN_PROGRESS")


class Request:
    """One enqueued operation. The handle is released once the result (and any
    engine-allocated output) has been taken, so a failed operation leaves
    nothing behind and the next call with the same name works."""

    def __init__(self, handle, keep, make_output=None, count=1):
        self._handle = handle
        self._keep = keep  # memory the engine reads or writes until completion
        self._make_output = make_output
        self._count = count
        self._done = False
        self._error = None
        self._lock = threading.Lock()
        self.received_splits = None
        self.join_result = None
        self.kind = None

    def _complete(self, code):
        lib = _lib()
        try:
            if code != errors.code_of("TANDEM_SUCCESS"):
                message = lib.tandem_handle_error(self._handle)
                self._error = errors.from_result(code, message.decode(errors="replace")
                                                 if message else "")
            else:
                self._collect(lib)
        except errors.TandemError as exc:
            self._error = exc
        finally:
            lib.tandem_handle_release(self._handle)
            self._done = True
            self._keep = None

    def _collect(self, lib):
        if self._make_output is not None:
            for index in range(self._count):
                shape = (ctypes.c_int64 * _MAX_NDIM)()
                ndim = ctypes.c_int(0)
                errors.check(lib.tandem_handle_output_shape(self._handle, index, shape,
                                                            _MAX_NDIM, ctypes.byref(ndim)))
                dims = tuple(shape[i] for i in range(ndim.value))
                ptr, nbytes = self._make_output(index, dims)
                if nbytes:
                    errors.check(lib.tandem_handle_copy_output(self._handle, index, ptr,
                                                               nbytes))
        if self.kind == "alltoall":
            splits = (ctypes.c_int64 * len(self.received_splits))()
            errors.check(lib.tandem_handle_received_splits(self._handle, splits, len(splits)))
            self.received_splits = list(splits)
        elif self.kind == "join":
            last = ctypes.c_int(-1)
            errors.check(lib.tandem_handle_join_result(self._handle, ctypes.byref(last)))
            self.join_result = last.value

    def test(self):
        """True once complete; raises the operation's error if it failed."""
        with self._lock:
            if not self._done:
                code = _lib().tandem_handle_poll(self._handle)
                if code != _in_progress():
                    self._complete(code)
        if self._error is not None:
            raise self._error
        return self._done

    def wait(self):
        with self._lock:
            if not self._done:
                # No timeout of our own: the engine fails every operation when
                # a peer is lost or stops answering (TANDEM_TIMEOUT).
                self._complete(_lib().tandem_handle_wait(self._handle, -1.0))
        if self._error is not None:
            raise self._error


def _enqueue(fn, *args, keep, make_output=None, count=1, kind=None, nsplits=0, stream=False):
    handle = _handle_t(0)
    lib = _lib()
    if stream is not False:
        # Per thread in the engine, and read by the enqueue below: both calls
        # must happen on this thread, one right after the other.
        errors.check(lib.tandem_set_device_stream(ctypes.c_void_p(stream or None)))
    errors.check(getattr(lib, fn)(*args, ctypes.byref(handle)))
    request = Request(handle.value, keep, make_output, count)
    request.kind = kind
    if kind == "alltoall":
        request.received_splits = [0] * nsplits
    return request


def allreduce(name, buffer, output_ptr, op, prescale, postscale, process_set=_GLOBAL,
              keep=None):
    d = _Described(name, buffer, output_ptr)
    return _enqueue("tandem_enqueue_allreduce", ctypes.byref(d.struct), op, prescale,
                    postscale, process_set, keep=(d, keep), stream=_device_stream([buffer]))


def grouped_allreduce(names, buffers, output_ptrs, op, prescale, postscale,
                      process_set=_GLOBAL, keep=None):
    ds = [_Described(n, b, o) for n, b, o in zip(names, buffers, output_ptrs)]
    array = (_Tensor * max(1, len(ds)))(*[d.struct for d in ds])
    return _enqueue("tandem_enqueue_grouped_allreduce", array, len(ds), op, prescale,
                    postscale, process_set, keep=(ds, array, keep),
                    stream=_device_stream(buffers))


def broadcast(name, buffer, output_ptr, root, process_set=_GLOBAL, keep=None):
    d = _Described(name, buffer, output_ptr)
    return _enqueue("tandem_enqueue_broadcast", ctypes.byref(d.struct), root, process_set,
                    keep=(d, keep), stream=_device_stream([buffer]))


def allgather(name, buffer, make_output, process_set=_GLOBAL, keep=None):
    d = _Described(name, buffer, None)
    return _enqueue("tandem_enqueue_allgather", ctypes.byref(d.struct), process_set,
                    keep=(d, keep), make_output=make_output, stream=_device_stream([buffer]))


def alltoall(name, buffer, splits, set_size, make_output, process_set=_GLOBAL, keep=None):
    d = _Described(name, buffer, None)
    if splits is None:
        c_splits, nsplits = None, 0
    else:
        c_splits, nsplits = (ctypes.c_int64 * max(1, len(splits)))(*splits), len(splits)
    return _enqueue("tandem_enqueue_alltoall", ctypes.byref(d.struct), c_splits, nsplits,
                    process_set, keep=(d, c_splits, keep), make_output=make_output,
                    kind="alltoall", nsplits=set_size, stream=_device_stream([buffer]))


def reducescatter(name, buffer, op, prescale, postscale, make_output, process_set=_GLOBAL,
                  keep=None):
    d = _Described(name, buffer, None)
    return _enqueue("tandem_enqueue_reducescatter", ctypes.byref(d.struct), op, prescale,
                    postscale, process_set, keep=(d, keep), make_output=make_output,
                    stream=_device_stream([buffer]))


def start_barrier(process_set=_GLOBAL):
    return _enqueue("tandem_enqueue_barrier", process_set, keep=None)


def barrier(process_set=_GLOBAL):
    start_barrier(process_set).wait()


def start_join(device=-1):
    """A join request; once waited for, ``join_result`` is the last rank to join."""
    return _enqueue("tandem_enqueue_join", device, keep=None, kind="join")


def join(device=-1):
    """Blocks until every rank has joined; returns the last rank to join."""
    request = start_join(device)
    request.wait()
    return request.join_result


# ------------------------------------------------------------- process sets

def add_process_set(ranks):
    c_ranks = (ctypes.c_int * max(1, len(ranks)))(*ranks)
    ident = ctypes.c_int(-1)
    errors.check(_lib().tandem_add_process_set(c_ranks, len(ranks), ctypes.byref(ident)))
    return ident.value


def remove_process_set(ident):
    errors.check(_lib().tandem_remove_process_set(ident))


def process_set_rank(ident):
    value = ctypes.c_int(-1)
    errors.check(_lib().tandem_process_set_rank(ident, ctypes.byref(value)))
    return value.value


def process_set_size(ident):
    value = ctypes.c_int(-1)
    errors.check(_lib().tandem_process_set_size(ident, ctypes.byref(value)))
    return value.value


def process_set_ranks(ident):
    n = ctypes.c_int(0)
    size = process_set_size(ident)
    ranks = (ctypes.c_int * max(1, size))()
    errors.check(_lib().tandem_process_set_ranks(ident, ranks, size, ctypes.byref(n)))
    return list(ranks[:n.value])


# ------------------------------------------------------------ timeline, counters

def start_timeline(path, mark_cycles=False):
    errors.check(_lib().tandem_start_timeline(str(path).encode(), int(bool(mark_cycles))))


def stop_timeline():
    errors.check(_lib().tandem_stop_timeline())


def counters():
    """The runtime's counters by name ("cycles", "cache_hits", ...)."""
    out, index = {}, 0
    lib = _lib()
    invalid = errors.code_of("TANDEM_ERR_INVALID_ARGUMENT")
    while True:
        name, value = ctypes.c_char_p(), ctypes.c_uint64(0)
        code = lib.tandem_runtime_counter(index, ctypes.byref(name), ctypes.byref(value))
        if code == invalid:
            return out
        errors.check(code)
        out[name.value.decode()] = value.value
        index += 1


def autotune_state():
    """Autotune (TANDEM_AUTOTUNE; docs/runtime.md, "Autotune") on this rank:
    a dict with ``on``, ``settled`` and ``applied``, one dict per change of
    the tuned values (``cycle``: the cycle after which this rank applied it,
    ``fusion_threshold`` in bytes, ``cycle_time_ms``, ``cache_enabled``);
    the same on every rank."""
    lib = _lib()
    needed = ctypes.c_size_t(0)
    errors.check(lib.tandem_autotune_state(None, 0, ctypes.byref(needed)))
    while True:
        buf = ctypes.create_string_buffer(needed.value)
        errors.check(lib.tandem_autotune_state(buf, needed.value, ctypes.byref(needed)))
        if needed.value <= len(buf):
            break
    return json.loads(buf.value.decode())


def straggler_report(period=False):
    """The straggler report (TANDEM_STRAGGLER_REPORT; docs/runtime.md,
    "Stragglers"): the job's so far, or with ``period=True`` the last report
    period's. A dict: ``verdict`` (one line), ``kind`` ("rank", "ranks",
    "node" or "none"), ``named`` (the ranks named), ``node``, ``seconds``,
    ``rounds``, ``reports`` (how many reports ran) and ``rows``, one dict per
    rank ordered by the time the set waited for it (``rank``, ``host``,
    ``gpu``, ``cpus``, ``rounds``, ``last``, ``last_share``, ``median_s``,
    ``p95_s``, ``held_s``, ``held_share``, ``stands_out``). None before the
    first report."""
    lib = _lib()
    needed = ctypes.c_size_t(0)
    errors.check(lib.tandem_straggler_report(None, 0, ctypes.byref(needed)))
    while True:
        buf = ctypes.create_string_buffer(needed.value)
        errors.check(lib.tandem_straggler_report(buf, needed.value, ctypes.byref(needed)))
        if needed.value <= len(buf):
            break
    everything = json.loads(buf.value.decode())
    report = everything["period" if period else "total"]
    if report is None:
        return None
    report["reports"] = everything["reports"]
    return report


def allgather_int64(values, process_set=_GLOBAL, name=None):
    """Every rank's list of ``len(values)`` int64s, in rank order of the set
    (blocking). All ranks must pass the same number of values. Without a
    ``name`` one is drawn from a counter per process set (tandem._names), so
    members that make these calls in the same order agree whatever ran in
    other sets."""
    n = len(values)
    send = (ctypes.c_int64 * max(1, n))(*values)
    holder = {}

    def make_output(_index, shape):
        count = 1
        for d in shape:
            count *= d
        holder["out"] = (ctypes.c_int64 * max(1, count))()
        return ctypes.addressof(holder["out"]), count * 8

    if name is None:
        name = _names.internal("allgather_int64", process_set)
    allgather(name, Buffer(ctypes.addressof(send), _dtypes.INT64, (1, n)), make_output,
              process_set, keep=send).wait()
    flat = list(holder["out"])
    return [flat[r * n:(r + 1) * n] for r in range(len(flat) // n if n else 0)]


def has_gpu_api():
    """Whether the loaded libtandem has the GPU calls at all (older builds do not)."""
    return _lib().has("tandem_gpu_available")


def gpu_available():
    """(available, reason) from the engine; (False, why) when the loaded
    libtandem has no GPU path at all."""
    lib = _lib()
    if not lib.has("tandem_gpu_available"):
        return False, "the loaded libtandem (%s) was built without the GPU path" % lib.origin
    reason = ctypes.c_char_p()
    value = lib.tandem_gpu_available(ctypes.byref(reason))
    text = reason.value.decode(errors="replace") if reason.value else ""
    if value < 0:
        raise errors.make("TANDEM_ERR_INVALID_ARGUMENT", text)
    return value == 1, text

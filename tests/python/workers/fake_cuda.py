"""Stand-ins for CUDA on a machine without one, for tests of the binding's
CUDA branch.

``fake_cuda(t, index)`` returns a view of the CPU tensor ``t`` whose
``device`` says ``cuda:<index>``: the binding takes its CUDA branch for it
(device index, data pointer, current stream), while its memory stays on the
host, so nothing that reads it can crash. It is only ever handed to the real
engine where the engine refuses GPU tensors before touching memory (its
preflight: the GPU path is not usable on some rank), or to ``Recorder``.

``Recorder`` replaces the library object behind ``tandem._collectives``
(the ctypes boundary): it records what the binding passes to
``tandem_set_device_stream``, the enqueue calls (every tandem_tensor_t field)
and ``tandem_handle_copy_output``, and answers like an engine with one rank
(allreduce/broadcast copy input to output, allgather/alltoall/reducescatter
return the input), so that the binding's completion path runs too. Calls it
does not intercept go to the real libtandem.
"""

import ctypes
import threading

import torch

_classes = {}


def fake_cuda(tensor, index=0):
    cls = _classes.get(index)
    if cls is None:
        cls = type("FakeCuda%d" % index, (torch.Tensor,), {
            "device": property(lambda self: torch.device("cuda", index)),
            "is_cuda": property(lambda self: True),
        })
        _classes[index] = cls
    return tensor.as_subclass(cls)


class FakeStream:
    """What torch.cuda.current_stream() returns, as far as the binding reads it."""

    def __init__(self, handle, device):
        self.cuda_stream, self.device = handle, device

    def __eq__(self, other):
        return isinstance(other, FakeStream) and other.cuda_stream == self.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)

    def wait_stream(self, other):
        raise AssertionError("stream ordering is recorded by fake_streams(), not here")


def cuda_device(device):
    """torch.device of a CUDA device given as an index, a string or a device.
    torch >= 2.x reads a bare int as "accelerator N" and raises when no
    accelerator exists (as here), where torch 1.x read it as cuda:N."""
    if isinstance(device, int):
        return torch.device("cuda", device)
    return torch.device(device)


def stream_handle(device):
    """A distinct, recognisable cudaStream_t per device index."""
    return 0x5000 + 16 * cuda_device(device).index


def fake_streams(monkeypatch, log, current_is_default=False):
    """torch.cuda's stream calls as the binding uses them: the current stream
    of cuda:i has handle stream_handle(i) (or 0, the legacy default stream,
    with current_is_default); wait_stream calls are appended to ``log``."""
    def current(device=None):
        handle = 0 if current_is_default else stream_handle(device)
        return _Logged(handle, cuda_device(device), log)

    def default(device=None):
        return _Logged(0, cuda_device(device), log)

    monkeypatch.setattr(torch.cuda, "current_stream", current)
    monkeypatch.setattr(torch.cuda, "default_stream", default)


class _Logged(FakeStream):
    def __init__(self, handle, device, log):
        super().__init__(handle, device)
        self.log = log

    def wait_stream(self, other):
        self.log.append(("wait_stream", self.cuda_stream, other.cuda_stream, self.device.index))


class _TensorRecord:
    def __init__(self, struct):
        self.name = struct.name.decode()
        self.input = struct.input or 0
        self.output = struct.output or 0
        self.dtype = struct.dtype
        self.device = struct.device
        self.shape = tuple(struct.shape[i] for i in range(struct.ndim))


class Recorder:
    """The ctypes boundary, recorded (see the module docstring)."""

    def __init__(self, real, dtype_sizes):
        self.real = real
        self.sizes = dtype_sizes  # engine dtype -> bytes
        self.log = []  # ("stream", thread, value) / ("enqueue", fn, thread, [records]) / ...
        self.handles = {}
        self.next_handle = 1
        self.lock = threading.Lock()

    def has(self, name):
        return self.real.has(name)

    def __getattr__(self, name):
        return getattr(self.real, name)

    # -------------------------------------------------------------- calls
    def tandem_set_device_stream(self, stream):
        self.log.append(("stream", threading.get_ident(), stream.value or 0))
        return 0

    def _nbytes(self, rec):
        n = 1
        for d in rec.shape:
            n *= d
        return n * self.sizes[rec.dtype]

    def _new(self, fn, records, handle_ref, **extra):
        with self.lock:
            handle = self.next_handle
            self.next_handle += 1
        self.log.append(("enqueue", fn, threading.get_ident(), records, extra))
        # A world of one: the result of every collective is the input itself.
        outputs = []
        for rec in records:
            nbytes = self._nbytes(rec)
            if fn in ("tandem_enqueue_allreduce", "tandem_enqueue_grouped_allreduce",
                      "tandem_enqueue_broadcast"):
                if rec.output != rec.input and nbytes:
                    ctypes.memmove(rec.output, rec.input, nbytes)
            else:
                outputs.append((rec.shape, ctypes.string_at(rec.input, nbytes)
                                if nbytes else b""))
        self.handles[handle] = (fn, records, outputs)
        handle_ref._obj.value = handle
        return 0

    def tandem_enqueue_allreduce(self, tensor_ref, op, prescale, postscale, ps, handle_ref):
        return self._new("tandem_enqueue_allreduce", [_TensorRecord(tensor_ref._obj)],
                         handle_ref, op=op, prescale=prescale, postscale=postscale)

    def tandem_enqueue_grouped_allreduce(self, array, count, op, prescale, postscale, ps,
                                         handle_ref):
        return self._new("tandem_enqueue_grouped_allreduce",
                         [_TensorRecord(array[i]) for i in range(count)], handle_ref, op=op)

    def tandem_enqueue_broadcast(self, tensor_ref, root, ps, handle_ref):
        return self._new("tandem_enqueue_broadcast", [_TensorRecord(tensor_ref._obj)],
                         handle_ref, root=root)

    def tandem_enqueue_allgather(self, tensor_ref, ps, handle_ref):
        return self._new("tandem_enqueue_allgather", [_TensorRecord(tensor_ref._obj)],
                         handle_ref)

    def tandem_enqueue_alltoall(self, tensor_ref, splits, nsplits, ps, handle_ref):
        return self._new("tandem_enqueue_alltoall", [_TensorRecord(tensor_ref._obj)],
                         handle_ref, nsplits=nsplits)

    def tandem_enqueue_reducescatter(self, tensor_ref, op, prescale, postscale, ps,
                                     handle_ref):
        return self._new("tandem_enqueue_reducescatter", [_TensorRecord(tensor_ref._obj)],
                         handle_ref, op=op)

    def tandem_handle_poll(self, handle):
        return 0

    def tandem_handle_wait(self, handle, timeout):
        return 0

    def tandem_handle_error(self, handle):
        return None

    def tandem_handle_output_shape(self, handle, index, shape, max_ndim, ndim_ref):
        out_shape = self.handles[handle][2][index][0]
        for i, d in enumerate(out_shape):
            shape[i] = d
        ndim_ref._obj.value = len(out_shape)
        return 0

    def tandem_handle_copy_output(self, handle, index, dst, nbytes):
        data = self.handles[handle][2][index][1]
        self.log.append(("copy_output", threading.get_ident(), handle, index, dst, nbytes))
        assert nbytes == len(data), (nbytes, len(data))
        if nbytes:
            ctypes.memmove(dst, data, nbytes)
        return 0

    def tandem_handle_received_splits(self, handle, splits, n):
        splits[0] = self.handles[handle][1][0].shape[0]
        return 0

    def tandem_handle_release(self, handle):
        self.log.append(("release", handle))
        del self.handles[handle]

    # -------------------------------------------------------------- reading
    def events(self, kind):
        return [e for e in self.log if e[0] == kind]

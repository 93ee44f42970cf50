"""horovod.torch's collectives on libtandem: handles, dtypes, autograd.

Tensors reach the engine as (data pointer, element count, engine dtype):

* A contiguous CPU tensor of a type the engine reduces natively is handed over
  as is, with no copy: in-place calls pass the same pointer as send and
  receive buffer, out-of-place ones reduce straight into a fresh output.
* Complex tensors are reduced as their real and imaginary parts
  (``view_as_real``: still no copy); only Sum and Average mean anything there.
* ``int16`` has no engine type: it is widened to int32 and narrowed back.
  Two's-complement wrap-around makes Sum and Product exact modulo 2**16, as
  native int16 arithmetic would be; Min and Max are unchanged by widening.
* Non-contiguous tensors are copied to a contiguous buffer and copied back
  when the operation is synchronized.
* Broadcast, allgather and alltoall move bytes, so every torch dtype works.
* CUDA tensors take the same path with their device index and device pointer,
  ordered on the current stream of their device (see ``_cuda.py``). Whether
  the GPU path can run is the engine's decision: where it cannot, the
  operation fails on every rank with the engine's ``UnsupportedError`` naming
  the ranks and the reason, and the next call works.

Outputs sized by negotiation (allgather, alltoall, reducescatter) are copied
once out of the engine's memory into a fresh tensor on the input's device.

A handle is an int, as in Horovod; ``synchronize(handle)`` returns the output
(and re-raises the engine's error for that operation, after which the next
call works as usual).
"""

import torch

from tandem import _collectives, _dtypes, _handles, _ops, errors
from tandem import process_sets as _ps
from tandem._handles import poll, synchronize  # noqa: F401 (hvd.poll, hvd.synchronize)
from tandem._ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from tandem.torch import _cuda
from tandem.torch.compression import Compression

global_process_set = _ps.global_process_set

_NATIVE = {
    torch.uint8: _dtypes.UINT8, torch.int8: _dtypes.INT8, torch.int32: _dtypes.INT32,
    torch.int64: _dtypes.INT64, torch.float16: _dtypes.FLOAT16,
    torch.bfloat16: _dtypes.BFLOAT16, torch.float32: _dtypes.FLOAT32,
    torch.float64: _dtypes.FLOAT64, torch.bool: _dtypes.BOOL,
}
_COMPLEX_PARTS = {torch.complex64: torch.float32, torch.complex128: torch.float64,
                  torch.complex32: torch.float16}
_WIDENED = {torch.int16: torch.int32}


# ------------------------------------------------------------------ checks

def _check_tensor(tensor, what):
    if not isinstance(tensor, torch.Tensor):
        raise _ops.invalid("%s expects a torch.Tensor, got %s" % (what, type(tensor).__name__))
    if tensor.device.type not in ("cpu", "cuda"):
        # CUDA tensors go to the engine, which alone knows whether its GPU
        # path runs on every rank; other devices have no path at all.
        raise errors.make(
            "TANDEM_ERR_UNSUPPORTED",
            "%s: tensor is on %s; Tandem reduces CPU and CUDA tensors only: move it with "
            "tensor.cpu() (or .cuda() where tandem-info reports the GPU path)"
            % (what, tensor.device))
    if tensor.layout != torch.strided:
        raise _ops.invalid("%s: %s tensors are not supported; convert with tensor.to_dense() "
                       "(DistributedOptimizer: sparse_as_dense=True)" % (what, tensor.layout))


# ------------------------------------------------------------- wire formats

def _wire_dtype(dtype, op, what):
    """(engine dtype, torch dtype the engine sees) for a reduction, or raises."""
    if dtype in _NATIVE:
        return _NATIVE[dtype], dtype
    if dtype in _WIDENED:
        return _NATIVE[_WIDENED[dtype]], _WIDENED[dtype]
    if dtype in _COMPLEX_PARTS:
        if op not in (Sum, Average):
            raise _ops.invalid("%s: %s on a %s tensor has no meaning; only Sum and Average "
                           "reduce complex numbers" % (what, _ops.OP_NAMES[op], dtype))
        parts = _COMPLEX_PARTS[dtype]
        return _NATIVE[parts], parts
    raise _ops.invalid("%s: tensors of type %s cannot be reduced; supported: %s, int16 and "
                   "complex" % (what, dtype, ", ".join(str(d) for d in _NATIVE)))


def _wire_view(tensor):
    """The tensor as the engine reduces it, sharing memory; None if a copy is needed."""
    if not tensor.is_contiguous():
        return None
    if tensor.dtype in _NATIVE:
        return tensor
    if tensor.dtype in _COMPLEX_PARTS:
        return torch.view_as_real(tensor)
    return None


def _wire_copy(tensor, wire):
    if tensor.dtype in _COMPLEX_PARTS:
        return torch.view_as_real(tensor.contiguous()).clone()
    return tensor.to(dtype=wire, memory_format=torch.contiguous_format, copy=True)


def _unwire(buf, dtype):
    if dtype in _COMPLEX_PARTS:
        return torch.view_as_complex(buf)
    return buf if buf.dtype == dtype else buf.to(dtype)


def _is_cuda(tensor):
    return tensor.device.type == "cuda"


def _buffer_of(tensor, engine_dtype, shape):
    if _is_cuda(tensor):
        return _collectives.Buffer(tensor.data_ptr(), engine_dtype, shape,
                                   _cuda.device_index(tensor), _cuda.current_stream(tensor))
    return _collectives.Buffer(tensor.data_ptr(), engine_dtype, shape)


def _buffer(tensor, engine_dtype):
    return _buffer_of(tensor, engine_dtype, tensor.shape)


def _byte_buffer(tensor):
    """Any contiguous tensor for the byte-moving collectives: in its own type
    when the engine has it, else as bytes with the last dimension widened by
    the element size (the engine then checks shapes in bytes, which agree
    exactly when the element shapes agree)."""
    if tensor.dtype in _NATIVE:
        return _buffer(tensor, _NATIVE[tensor.dtype])
    shape = list(tensor.shape) or [1]
    shape[-1] *= tensor.element_size()
    return _buffer_of(tensor, _dtypes.UINT8, shape)


def _from_bytes_shape(shape, dtype):
    """Element shape of an engine output described by _byte_buffer."""
    if dtype in _NATIVE:
        return tuple(shape)
    size = torch.empty((), dtype=dtype).element_size()
    shape = list(shape)
    shape[-1] //= size
    return tuple(shape)


class _Results:
    """Tensors for engine-allocated results (allgather, alltoall,
    reducescatter), on the device of ``like``: ``make_output`` is called by
    the request once the engine knows each shape, ``results[i]`` returns them
    (for CUDA, once the current stream is ordered after the engine's copy)."""

    def __init__(self, dtype, like, shape_fn=None):
        self.dtype, self.shape_fn = dtype, shape_fn
        self.device = like.device if _is_cuda(like) else None
        self.tensors = {}
        self.ordered = False

    def make_output(self, index, shape):
        shape = _from_bytes_shape(shape, self.dtype) if self.shape_fn is None \
            else self.shape_fn(shape)
        if self.device is None:
            out = torch.empty(shape, dtype=self.dtype)
        else:
            out = _cuda.empty(shape, self.dtype, self.device)
            _cuda.before_result_copy(self.device)
        self.tensors[index] = out
        return out.data_ptr(), out.numel() * out.element_size()

    def __getitem__(self, index):
        if self.device is not None and not self.ordered:
            _cuda.after_result_copy(self.device)
            self.ordered = True
        return self.tensors[index]


# ------------------------------------------------------------------ allreduce

class _Plan:
    """How one tensor goes through a reduction: buffers and the fix-ups after."""

    def __init__(self, tensor, output, op, process_set, what):
        _check_tensor(tensor, what)
        self.engine_dtype, wire = _wire_dtype(tensor.dtype, op, what)
        self.engine_op, self.divide_by = op, None
        if op == Average and not wire.is_floating_point:
            if wire == torch.bool:
                raise _ops.invalid("%s: Average of a bool tensor has no meaning; use Sum (or) "
                               "or Min (and)" % what)
            # The engine averages floating types only; integers are summed and
            # floor-divided here, as Horovod does for integer tensors.
            self.engine_op, self.divide_by = Sum, process_set.size()
        self.tensor, self.output = tensor, output
        self.send, self.recv = _wire_view(tensor), _wire_view(output)
        self.copy_back = None
        if self.send is None or self.recv is None:
            self.send = self.recv = _wire_copy(tensor, wire)
            self.copy_back = self.send

    def finish(self):
        if self.copy_back is not None:
            self.output.copy_(_unwire(self.copy_back, self.output.dtype))
        if self.divide_by is not None:
            self.output.div_(self.divide_by, rounding_mode="floor")
        return self.output


def _allreduce_async(tensor, output, name, op, prescale, postscale, process_set):
    ps = _ps.ident(process_set, "allreduce")
    plan = _Plan(tensor, output, op, process_set, "allreduce")
    request = _collectives.allreduce(
        _ops.auto_name(name, "allreduce"), _buffer(plan.send, plan.engine_dtype),
        plan.recv.data_ptr(),
        plan.engine_op, float(prescale), float(postscale), ps, keep=plan)
    return _handles.register([request], plan.finish)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    op = _ops.resolve_op(op, average, "allreduce")
    _check_tensor(tensor, "allreduce_async")
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    op = _ops.resolve_op(op, average, "allreduce_")
    return _allreduce_async(tensor, tensor, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


class TandemAllreduce(torch.autograd.Function):
    """Allreduce whose gradient is the allreduce of the incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, op, name, prescale, postscale, process_set):
        ctx.op, ctx.prescale, ctx.postscale, ctx.process_set = op, prescale, postscale, process_set
        _check_tensor(tensor, "allreduce")
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return synchronize(_allreduce_async(tensor, output, name, op, prescale, postscale,
                                            process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale,
                         postscale_factor=ctx.postscale, process_set=ctx.process_set)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Returns the reduction of ``tensor`` over the ranks (Average by default);
    the input is not modified. Differentiable."""
    op = _ops.resolve_op(op, average, "allreduce")
    _check_tensor(tensor, "allreduce")
    compressed, ctx = compression.compress(tensor)
    reduced = TandemAllreduce.apply(compressed, op, name, prescale_factor, postscale_factor,
                                    process_set)
    return compression.decompress(reduced, ctx)


# ------------------------------------------------------- grouped allreduce

def _grouped_allreduce_async(tensors, outputs, name, op, prescale, postscale, process_set):
    ps = _ps.ident(process_set, "grouped_allreduce")
    plans = [_Plan(t, o, op, process_set, "grouped_allreduce")
             for t, o in zip(tensors, outputs)]
    ops = {p.engine_op for p in plans}
    if len(ops) > 1:
        # Average over integer and floating tensors at once: one engine op
        # per group, so reduce both as Sum and divide the floating ones here.
        raise _ops.invalid("grouped_allreduce: Average over a mix of integer and floating "
                       "tensors; group them by kind")
    base = _ops.auto_name(name, "grouped_allreduce")
    request = _collectives.grouped_allreduce(
        ["%s.%d" % (base, i) for i in range(len(plans))],
        [_buffer(p.send, p.engine_dtype) for p in plans], [p.recv.data_ptr() for p in plans],
        ops.pop() if ops else op, float(prescale), float(postscale), ps, keep=plans)
    return _handles.register([request], lambda: [p.finish() for p in plans])


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = _ops.resolve_op(op, average, "grouped_allreduce")
    for t in tensors:
        _check_tensor(t, "grouped_allreduce_async")
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
    return _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = _ops.resolve_op(op, average, "grouped_allreduce_")
    return _grouped_allreduce_async(tensors, tensors, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class TandemGroupedAllreduce(torch.autograd.Function):

    @staticmethod
    def forward(ctx, op, name, prescale, postscale, process_set, *tensors):
        ctx.op, ctx.prescale, ctx.postscale, ctx.process_set = op, prescale, postscale, process_set
        for t in tensors:
            _check_tensor(t, "grouped_allreduce")
        outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
        return tuple(synchronize(_grouped_allreduce_async(
            list(tensors), outputs, name, op, prescale, postscale, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=ctx.op, prescale_factor=ctx.prescale,
                                    postscale_factor=ctx.postscale, process_set=ctx.process_set)
        return (None, None, None, None, None) + tuple(reduced)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    op = _ops.resolve_op(op, average, "grouped_allreduce")
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors]) if tensors else ((), ())
    reduced = TandemGroupedAllreduce.apply(op, name, prescale_factor, postscale_factor,
                                           process_set, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


# ------------------------------------------------------------------ broadcast

def _broadcast_async(tensor, output, root_rank, name, process_set, what):
    _check_tensor(tensor, what)
    ps = _ps.ident(process_set, what)
    send = tensor if tensor.is_contiguous() else tensor.contiguous()
    recv = output if output.is_contiguous() else torch.empty_like(
        output, memory_format=torch.contiguous_format)
    # The engine copies the root's input into every rank's output, so an
    # out-of-place broadcast needs no copy here.
    request = _collectives.broadcast(_ops.auto_name(name, "broadcast"), _byte_buffer(send),
                                     recv.data_ptr(), int(root_rank), ps,
                                     keep=(tensor, send, output, recv))

    def finish():
        if recv is not output:
            output.copy_(recv)
        return output
    return _handles.register([request], finish)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    _check_tensor(tensor, "broadcast_async")
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _broadcast_async(tensor, output, root_rank, name, process_set, "broadcast")


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async(tensor, tensor, root_rank, name, process_set, "broadcast_")


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class TandemBroadcast(torch.autograd.Function):
    """Broadcast; the gradient flows back to the root only (summed over ranks)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Sum, process_set=ctx.process_set)
        if ctx.process_set.rank() != ctx.root_rank:
            grad = grad * 0
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    return TandemBroadcast.apply(tensor, root_rank, name, process_set)


# ------------------------------------------------------------------ allgather

def _allgather_start(tensor, name, process_set, what):
    _check_tensor(tensor, what)
    ps = _ps.ident(process_set, what)
    if tensor.dim() == 0:
        raise _ops.invalid("%s: a 0-dim tensor cannot be concatenated; use tensor.view(1)" % what)
    send = tensor if tensor.is_contiguous() else tensor.contiguous()
    outputs = _Results(tensor.dtype, tensor)
    request = _collectives.allgather(name, _byte_buffer(send), outputs.make_output, ps,
                                     keep=(tensor, send))
    return request, (lambda: outputs[0])


def allgather_async(tensor, name=None, process_set=global_process_set):
    request, finish = _allgather_start(tensor, _ops.auto_name(name, "allgather"), process_set,
                                       "allgather")
    return _handles.register([request], finish)


class TandemAllgather(torch.autograd.Function):
    """Concatenation over ranks; each rank's gradient is its slice of the
    summed incoming gradient."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Sum, process_set=ctx.process_set)
        dims = _collectives.allgather_int64([ctx.dim], _ps.ident(ctx.process_set,
                                                                 "allgather"))
        offset = sum(d[0] for d in dims[:ctx.process_set.rank()])
        return grad.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    return TandemAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    base = _ops.auto_name(name, "grouped_allgather")
    starts = [_allgather_start(t, "%s.%d" % (base, i), process_set, "grouped_allgather")
              for i, t in enumerate(tensors)]
    return _handles.register([s[0] for s in starts], lambda: [s[1]() for s in starts])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    return synchronize(grouped_allgather_async(tensors, name, process_set))


# ------------------------------------------------------------------ alltoall

def _alltoall_start(tensor, splits, name, process_set, what):
    _check_tensor(tensor, what)
    ps = _ps.ident(process_set, what)
    if tensor.dim() == 0:
        raise _ops.invalid("%s: a 0-dim tensor cannot be split; use tensor.view(1)" % what)
    if splits is not None:
        splits = [int(s) for s in (splits.tolist() if isinstance(splits, torch.Tensor)
                                   else splits)]
    send = tensor if tensor.is_contiguous() else tensor.contiguous()
    outputs = _Results(tensor.dtype, tensor)
    request = _collectives.alltoall(name, _byte_buffer(send), splits, process_set.size(),
                                    outputs.make_output, ps, keep=(tensor, send))

    def finish():
        return outputs[0], torch.tensor(request.received_splits, dtype=torch.int32)
    return request, finish


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    request, finish = _alltoall_start(tensor, splits, _ops.auto_name(name, "alltoall"),
                                      process_set, "alltoall")
    return _handles.register([request], finish)


class TandemAlltoall(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, _grad_received):
        grad, _ = alltoall(grad_output, splits=ctx.received, process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Scatters slices of dim 0 (``splits[r]`` rows to rank r, equal parts when
    None) and gathers what the others sent. Returns the output, plus the
    received splits when ``splits`` was given (as Horovod does)."""
    output, received = TandemAlltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received)


# ------------------------------------------------------------ reducescatter

def _reducescatter_start(tensor, name, op, prescale, postscale, process_set, what):
    ps = _ps.ident(process_set, what)
    if isinstance(tensor, torch.Tensor) and tensor.dim() == 0:
        raise _ops.invalid("%s: a 0-dim tensor cannot be scattered; use tensor.view(1)" % what)
    # Rows are dealt by the engine as evenly as possible, the first ranks
    # taking one more (Horovod's layout).
    plan = _Plan(tensor, tensor, op, process_set, what)
    outputs = _Results(plan.send.dtype, plan.send, shape_fn=tuple)

    def finish():
        out = _unwire(outputs[0], tensor.dtype)
        if plan.divide_by is not None:
            out.div_(plan.divide_by, rounding_mode="floor")
        return out
    request = _collectives.reducescatter(
        name, _buffer(plan.send, plan.engine_dtype), plan.engine_op, float(prescale),
        float(postscale), outputs.make_output, ps, keep=plan)
    return request, finish


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    op = _ops.resolve_op(op, None, "reducescatter")
    request, finish = _reducescatter_start(tensor, _ops.auto_name(name, "reducescatter"), op,
                                           prescale_factor, postscale_factor, process_set,
                                           "reducescatter")
    return _handles.register([request], finish)


class TandemReducescatter(torch.autograd.Function):

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        ctx.op, ctx.process_set = op, process_set
        ctx.scale = prescale * postscale
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale,
                                               postscale))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(grad_output, process_set=ctx.process_set)
        if ctx.op == Average:
            grad = grad / ctx.process_set.size()
        if ctx.scale != 1.0:
            grad = grad * ctx.scale
        return grad, None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    compressed, ctx = compression.compress(tensor)
    out = TandemReducescatter.apply(compressed, name, _ops.resolve_op(op, None, "reducescatter"),
                                    process_set, prescale_factor, postscale_factor)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average,
                                process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    op = _ops.resolve_op(op, None, "grouped_reducescatter")
    base = _ops.auto_name(name, "grouped_reducescatter")
    starts = [_reducescatter_start(t, "%s.%d" % (base, i), op, prescale_factor,
                                   postscale_factor, process_set, "grouped_reducescatter")
              for i, t in enumerate(tensors)]
    return _handles.register([s[0] for s in starts], lambda: [s[1]() for s in starts])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    compressed = [compression.compress(t) for t in tensors]
    outs = synchronize(grouped_reducescatter_async([c[0] for c in compressed], name, op,
                                                   process_set, prescale_factor,
                                                   postscale_factor))
    return [compression.decompress(o, c[1]) for o, c in zip(outs, compressed)]


# ------------------------------------------------------- barrier, join

def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called it."""
    _collectives.barrier(_ps.ident(process_set, "barrier"))


def join(device=-1):
    """This rank has run out of data: it takes part in the other ranks'
    allreduces with nothing until every rank has joined. Returns the last
    rank to join."""
    return _collectives.join(int(device))

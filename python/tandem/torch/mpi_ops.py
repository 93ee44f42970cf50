"""horovod.torch's collectives on libtandem: handles, dtypes, autograd.

Tensors reach the engine as (data pointer, element count, engine dtype):

* A contiguous CPU tensor of a type the engine reduces natively is handed over
  as is, with no copy: in-place calls pass the same pointer as send and
  receive buffer, out-of-place ones reduce straight into a fresh output.
* Complex tensors are reduced as their real and imaginary parts
  (``view_as_real``: still no copy); only Sum and Average mean anything there.
* Types the engine lacks are widened and narrowed back, integer scale
  factors and Average are applied here (tandem._dtype_rules, the rules of
  every frontend, done with torch ops on the tensor's device).
* Non-contiguous tensors are copied to a contiguous buffer and copied back
  when the operation is synchronized.
* Broadcast, allgather and alltoall move bytes, so every torch dtype works
  (types the engine lacks travel as uint8 with a trailing dimension of the
  element size).
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

Names reach the engine as Horovod's torch binding forms them: ``allreduce.x``
for ``name="x"``, ``allreduce.noname.N`` without one, and ``_1of3``-style
suffixes inside a grouped call. Each kind of collective so has its own
namespace, as in Horovod: an allreduce and a broadcast named "x" may be in
flight together.

Gradients follow Horovod's conventions exactly (its test suite checks them):
allreduce's is the allreduce of the gradient with the same op and scales;
allgather's is this rank's rows of the *averaged* gradient; broadcast's is
the averaged gradient on the root and zero elsewhere; alltoall's is the
alltoall back with the received splits; reducescatter's is the allgather of
the gradient, times the set size for Sum and times the scale factors.
"""

import torch

from tandem import _basics, _built, _collectives, _dtype_rules, _handles, _names, _ops, errors
from tandem import process_sets as _ps
from tandem._handles import poll, synchronize  # noqa: F401 (hvd.poll, hvd.synchronize)
from tandem._ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from tandem.torch import _cuda
from tandem.torch.compression import Compression

global_process_set = _ps.global_process_set


def _op_name(kind, name, process_set=0):
    """The engine name of a torch collective, as Horovod's binding makes it:
    "<kind>.<name>", or "<kind>.noname.<n>" without a name (tandem._names;
    numbered per process set). Horovod treats an empty name as none."""
    if name:
        return "%s.%s" % (kind, name)
    return _names.unnamed(kind, process_set)


def _group_names(base, count):
    """Horovod's names of a grouped call's members: base_1ofN ... base_NofN."""
    return ["%s_%dof%d" % (base, i + 1, count) for i in range(count)]


def _dtype_name(dtype):
    """The name tandem._dtype_rules knows a torch dtype by ("torch.int16" -> "int16")."""
    return str(dtype).rsplit(".", 1)[-1]


def _native(dtype):
    """The engine's dtype for a torch dtype it handles natively, else None."""
    return _dtype_rules.engine_dtype(_dtype_name(dtype))


def _scale_truncating(tensor, factor):
    """``tensor * factor`` in float64, truncated toward zero into the
    tensor's integer type (Horovod's ScaleBuffer)."""
    return (tensor.to(torch.float64) * factor).to(tensor.dtype)


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

def _wire_view(tensor, rule):
    """The tensor as the engine reduces it, sharing memory; None if a copy is needed."""
    if not tensor.is_contiguous():
        return None
    if rule.complex_parts:
        return torch.view_as_real(tensor)
    if _dtype_name(tensor.dtype) == rule.wire:
        return tensor
    return None


def _wire_copy(tensor, rule):
    if rule.complex_parts:
        return torch.view_as_real(tensor.contiguous()).clone()
    copy = tensor.to(dtype=getattr(torch, rule.wire), memory_format=torch.contiguous_format,
                     copy=True)
    if rule.prescale is not None:
        copy = _scale_truncating(copy, rule.prescale)
    return copy.contiguous()


def _unwire(buf, dtype):
    if buf.dtype != dtype and dtype.is_complex:
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
    """Any contiguous tensor for the byte-moving collectives, in the byte
    form of tandem._dtype_rules (its own type, or uint8 with a trailing
    dimension of the element size)."""
    dtype, shape = _dtype_rules.byte_form(_dtype_name(tensor.dtype), tensor.shape,
                                          tensor.element_size())
    return _buffer_of(tensor, dtype, shape)


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
        shape = _dtype_rules.from_byte_shape(_dtype_name(self.dtype), shape) \
            if self.shape_fn is None else self.shape_fn(shape)
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
    """How one tensor goes through a reduction: the dtype rule
    (tandem._dtype_rules), the buffers the engine reads and writes, and the
    fix-ups after. A copy in the wire type is made when the tensor is not
    contiguous, has a type the engine lacks, or is scaled here (integers
    with a prescale factor); it is reduced in place and copied back."""

    def __init__(self, tensor, output, op, prescale, postscale, process_set, what):
        _check_tensor(tensor, what)
        self.rule = _dtype_rules.reduction(_dtype_name(tensor.dtype), op, prescale, postscale,
                                           process_set.size, what)
        self.tensor, self.output = tensor, output
        self.send, self.recv = _wire_view(tensor, self.rule), _wire_view(output, self.rule)
        self.copy_back = None
        if self.send is None or self.recv is None or self.rule.prescale is not None:
            self.send = self.recv = self.copy_back = _wire_copy(tensor, self.rule)

    @property
    def engine_dtype(self):
        return self.rule.engine_dtype

    def scale_result(self, result):
        """The reduction's result (in the wire type) with the integer
        postscale factor or Average applied."""
        rule = self.rule
        if rule.postscale is not None:
            result = _scale_truncating(result, rule.postscale)
        if rule.divide_by is not None:
            result = torch.div(result, rule.divide_by, rounding_mode="trunc")
        return result

    def finish(self):
        if self.copy_back is not None:
            self.output.copy_(_unwire(self.scale_result(self.copy_back), self.output.dtype))
        elif self.rule.fix_ups():
            self.output.copy_(self.scale_result(self.output))
        return self.output


def _check_adasum(op, tensors, process_set):
    if op == _ops.Adasum:
        _ops.check_adasum(_basics.size(), process_set, global_process_set,
                          on_gpu=any(t.is_cuda for t in tensors))


def _allreduce_async(tensor, output, name, op, prescale, postscale, process_set):
    _check_adasum(op, [tensor], process_set)
    ps = _ps.ident(process_set, "allreduce")
    plan = _Plan(tensor, output, op, prescale, postscale, process_set, "allreduce")
    rule = plan.rule
    request = _collectives.allreduce(
        _op_name("allreduce", name, ps), _buffer(plan.send, rule.engine_dtype),
        plan.recv.data_ptr(), rule.engine_op, rule.engine_prescale, rule.engine_postscale, ps,
        keep=plan)
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
    """Allreduce whose gradient is the allreduce of the incoming gradient
    with the same op and scale factors (Horovod's)."""

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
    _check_adasum(op, tensors, process_set)
    ps = _ps.ident(process_set, "grouped_allreduce")
    plans = [_Plan(t, o, op, prescale, postscale, process_set, "grouped_allreduce")
             for t, o in zip(tensors, outputs)]
    # One engine op and one pair of scales per group: integer tensors run
    # as Sum without scales (scaled here), floating ones as given.
    kinds = {(p.rule.engine_op, p.rule.engine_prescale, p.rule.engine_postscale) for p in plans}
    if len(kinds) > 1:
        raise _ops.invalid("grouped_allreduce: Average or scale factors over a mix of integer "
                           "and floating tensors; make one group of each kind")
    engine_op, pre, post = kinds.pop() if kinds else (op, float(prescale), float(postscale))
    request = _collectives.grouped_allreduce(
        _group_names(_op_name("grouped_allreduce", name, ps), len(plans)),
        [_buffer(p.send, p.engine_dtype) for p in plans], [p.recv.data_ptr() for p in plans],
        engine_op, pre, post, ps, keep=plans)
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


def _as_tuple(outputs):
    """Function.apply gives a bare tensor for one output; callers want a sequence."""
    return (outputs,) if isinstance(outputs, torch.Tensor) else tuple(outputs)


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
    reduced = _as_tuple(TandemGroupedAllreduce.apply(op, name, prescale_factor,
                                                     postscale_factor, process_set,
                                                     *compressed)) if tensors else ()
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


# ------------------------------------------------------- sparse allreduce

def sparse_allreduce_async(tensor, name=None, op=Average, process_set=global_process_set):
    """Reduces a sparse COO tensor as Horovod does: the indices and values
    of every rank are allgathered ("<name>.indices", "<name>.values"), so the
    result holds every rank's entries (uncoalesced: duplicates add up), with
    the values divided by the set size for Average. Returns a callable that
    waits and returns the result, as Horovod's does (not an int handle)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        raise _ops.invalid("sparse_allreduce_async expects a sparse COO tensor, got %s"
                           % (tensor.layout if isinstance(tensor, torch.Tensor)
                              else type(tensor).__name__))
    if op not in (Average, Sum):
        raise _ops.invalid("sparse_allreduce_async: only Average and Sum can be computed by "
                           "gathering the entries; got %s" % _ops.OP_NAMES.get(op, op))
    base = name if name else _names.unnamed("sparse_allreduce",
                                            _ps.ident(process_set, "sparse_allreduce"))
    # Allgather concatenates along dim 0: indices travel as [nnz, sparse_dim].
    indices_handle = allgather_async(tensor._indices().t().contiguous(),
                                     name="%s.indices" % base, process_set=process_set)
    values_handle = allgather_async(tensor._values(), name="%s.values" % base,
                                    process_set=process_set)

    def handle():
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == Average:
            values = values / process_set.size()
        return torch.sparse_coo_tensor(indices.t(), values, tensor.size(), dtype=values.dtype,
                                       device=tensor.device)
    return handle


# ------------------------------------------------------------------ broadcast

def _broadcast_async(tensor, output, root_rank, name, process_set, what):
    _check_tensor(tensor, what)
    ps = _ps.ident(process_set, what)
    send = tensor if tensor.is_contiguous() else tensor.contiguous()
    recv = output if output.is_contiguous() else torch.empty_like(
        output, memory_format=torch.contiguous_format)
    # The engine copies the root's input into every rank's output, so an
    # out-of-place broadcast needs no copy here.
    request = _collectives.broadcast(_op_name("broadcast", name, ps), _byte_buffer(send),
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
    """Broadcast; the gradient is the average of the incoming gradients over
    the set, kept on the root (a global rank) and zero elsewhere (Horovod's)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if _basics.rank() != ctx.root_rank:
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
    request, finish = _allgather_start(tensor, _op_name("allgather", name, _ps.ident(
        process_set, "allgather")), process_set,
                                       "allgather")
    return _handles.register([request], finish)


def _own_rows(grads, first_dims, process_set):
    """Each gradient's rows of this rank: ``first_dims`` are this rank's first
    dimensions, gathered (one collective) to find where its rows start."""
    rows = _collectives.allgather_int64(list(first_dims), _ps.ident(process_set, "allgather"))
    rank = process_set.rank()
    out = []
    for i, (grad, dim) in enumerate(zip(grads, first_dims)):
        offset = sum(row[i] for row in rows[:rank])
        out.append(grad.narrow(0, offset, dim))
    return out


class TandemAllgather(torch.autograd.Function):
    """Concatenation over ranks; each rank's gradient is its rows of the
    incoming gradient averaged over the set (Horovod's)."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim, ctx.process_set = tensor.shape[0] if tensor.dim() else 0, process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        return _own_rows([grad], [ctx.dim], ctx.process_set)[0], None, None


def allgather(tensor, name=None, process_set=global_process_set):
    return TandemAllgather.apply(tensor, name, process_set)


def _check_all(tensors, what, scatter=False):
    """Checks every tensor of a grouped call before any is enqueued, so that a
    refused member leaves nothing in flight."""
    for t in tensors:
        _check_tensor(t, what)
        if t.dim() == 0:
            raise _ops.invalid("%s: a 0-dim tensor cannot be %s; use tensor.view(1)"
                               % (what, "scattered" if scatter else "concatenated"))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    _check_all(tensors, "grouped_allgather")
    names = _group_names(_op_name("grouped_allgather", name,
                                  _ps.ident(process_set, "grouped_allgather")), len(tensors))
    starts = [_allgather_start(t, n, process_set, "grouped_allgather")
              for t, n in zip(tensors, names)]
    return _handles.register([s[0] for s in starts], lambda: [s[1]() for s in starts])


class TandemGroupedAllgather(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims, ctx.process_set = [t.shape[0] if t.dim() else 0 for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=Average, process_set=ctx.process_set)
        return (None, None) + tuple(_own_rows(reduced, ctx.dims, ctx.process_set))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Each tensor concatenated over the ranks (one negotiation for the group);
    a tuple, as Horovod returns. Differentiable."""
    if not tensors:
        return ()
    return _as_tuple(TandemGroupedAllgather.apply(name, process_set, *tensors))


# ------------------------------------------------------------------ alltoall

def _alltoall_start(tensor, splits, name, process_set, what):
    _check_tensor(tensor, what)
    ps = _ps.ident(process_set, what)
    if tensor.dim() == 0:
        raise _ops.invalid("%s: a 0-dim tensor cannot be split; use tensor.view(1)" % what)
    splits_like = None
    if isinstance(splits, torch.Tensor):
        if splits.dtype != torch.int32:
            raise _ops.invalid("%s expects splits to contain 32-bit integer elements "
                               "(torch.int32), got %s" % (what, splits.dtype))
        if splits.dim() > 1:
            raise _ops.invalid("%s expects a 1D splits tensor, got shape %s"
                               % (what, tuple(splits.shape)))
        splits_like = splits
        splits = [int(s) for s in splits.tolist()]
    elif splits is not None:
        splits = [int(s) for s in splits]
    send = tensor if tensor.is_contiguous() else tensor.contiguous()
    outputs = _Results(tensor.dtype, tensor)
    request = _collectives.alltoall(name, _byte_buffer(send), splits, process_set.size(),
                                    outputs.make_output, ps, keep=(tensor, send))

    def finish():
        # Horovod's received splits: like the splits tensor given (its device),
        # else an int32 CPU tensor.
        received = torch.tensor(request.received_splits, dtype=torch.int32)
        if splits_like is not None:
            received = received.to(splits_like.device)
        return outputs[0], received
    return request, finish


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    request, finish = _alltoall_start(tensor, splits, _op_name(
        "alltoall", name, _ps.ident(process_set, "alltoall")),
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
    plan = _Plan(tensor, tensor, op, prescale, postscale, process_set, what)
    outputs = _Results(plan.send.dtype, plan.send, shape_fn=tuple)

    def finish():
        return _unwire(plan.scale_result(outputs[0]), tensor.dtype)
    request = _collectives.reducescatter(
        name, _buffer(plan.send, plan.rule.engine_dtype), plan.rule.engine_op,
        plan.rule.engine_prescale, plan.rule.engine_postscale, outputs.make_output, ps,
        keep=plan)
    return request, finish


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    op = _ops.resolve_op(op, None, "reducescatter")
    request, finish = _reducescatter_start(tensor, _op_name(
        "reducescatter", name, _ps.ident(process_set, "reducescatter")), op,
                                           prescale_factor, postscale_factor, process_set,
                                           "reducescatter")
    return _handles.register([request], finish)


class TandemReducescatter(torch.autograd.Function):
    """Reducescatter; the gradient is the allgather of the incoming gradient
    times the set size for Sum and times the scale factors (Horovod's)."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale, ctx.postscale = prescale, postscale
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale,
                                               postscale))

    @staticmethod
    def backward(ctx, grad_output):
        grad = grad_output
        if ctx.op == Sum:
            grad = grad * ctx.process_set.size()
        if ctx.prescale != 1.0:
            grad = grad * ctx.prescale
        if ctx.postscale != 1.0:
            grad = grad * ctx.postscale
        return allgather(grad, process_set=ctx.process_set), None, None, None, None, None


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
    _check_all(tensors, "grouped_reducescatter", scatter=True)
    names = _group_names(_op_name("grouped_reducescatter", name,
                                  _ps.ident(process_set, "grouped_reducescatter")), len(tensors))
    starts = [_reducescatter_start(t, n, op, prescale_factor, postscale_factor, process_set,
                                   "grouped_reducescatter")
              for t, n in zip(tensors, names)]
    return _handles.register([s[0] for s in starts], lambda: [s[1]() for s in starts])


class TandemGroupedReducescatter(torch.autograd.Function):

    @staticmethod
    def forward(ctx, name, op, process_set, prescale, postscale, *tensors):
        ctx.op, ctx.process_set = op, process_set
        ctx.prescale, ctx.postscale = prescale, postscale
        return tuple(synchronize(grouped_reducescatter_async(list(tensors), name, op,
                                                             process_set, prescale,
                                                             postscale)))

    @staticmethod
    def backward(ctx, *grads):
        grads = list(grads)
        if ctx.op == Sum:
            grads = [g * ctx.process_set.size() for g in grads]
        if ctx.prescale != 1.0:
            grads = [g * ctx.prescale for g in grads]
        if ctx.postscale != 1.0:
            grads = [g * ctx.postscale for g in grads]
        return (None, None, None, None, None) + tuple(
            grouped_allgather(grads, process_set=ctx.process_set))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """Each tensor reduced and scattered over the ranks; a list. Differentiable."""
    op = _ops.resolve_op(op, None, "grouped_reducescatter")
    _check_all(tensors, "grouped_reducescatter", scatter=True)
    compressed = [compression.compress(t) for t in tensors]
    if not compressed:
        return []
    outs = _as_tuple(TandemGroupedReducescatter.apply(
        name, op, process_set, prescale_factor, postscale_factor, *[c[0] for c in compressed]))
    return [compression.decompress(o, c[1]) for o, c in zip(outs, compressed)]


# ------------------------------------------------------- barrier, join

def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called it."""
    _collectives.barrier(_ps.ident(process_set, "barrier"))


def join(device=-1):
    """This rank has run out of data: it takes part in the other ranks'
    allreduces with nothing until every rank has joined. Returns the last
    rank to join. ``device`` (Horovod's GPU for the zeros it contributes) is
    the CPU wherever the GPU path cannot run, as in a Horovod build without
    GPU operations, so scripts calling ``hvd.join(hvd.local_rank())`` run on
    CPU-only nodes."""
    device = int(device)
    if device != _collectives.DEVICE_CPU and not _built.gpu_status()[0]:
        device = _collectives.DEVICE_CPU
    return _collectives.join(device)

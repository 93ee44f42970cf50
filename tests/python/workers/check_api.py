"""Every horovod.torch call, run on every rank with values checked against
what the ranks contributed. Run as N ranks (tandem-run -np N, or srun
--horovod=on); each rank prints "PASS <check>" or "FAIL <check>: <why>" per
check and exits 1 if any failed. ``--only a,b`` runs a subset.

Written against ``horovod.torch`` on purpose: it is also the proof that the
shim exposes the API under Horovod's names.

Contributions are functions of the rank, so every rank can compute what every
other rank sent and hence the exact expected result. Values are small
integers so that float16/bfloat16 sums are exact and Product does not
overflow.
"""

import argparse
import json
import os
import sys
import tempfile

import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


REDUCIBLE = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
             torch.bfloat16, torch.float32, torch.float64, torch.bool]
COMPLEX = [torch.complex32, torch.complex64, torch.complex128]
ALL = REDUCIBLE + COMPLEX


def contribution(rank, shape, dtype, op=None):
    """What ``rank`` sends: small, rank-dependent, element-dependent values."""
    n = 1
    for d in shape:
        n *= d
    idx = torch.arange(n, dtype=torch.int64).reshape(shape)
    if dtype == torch.bool:
        values = (idx + rank) % 2 == 0
        return values
    if op == hvd.Product:
        values = (idx + rank) % 2 + 1  # 1 or 2: products stay small
    else:
        values = (idx % 5) + rank + 1
    if dtype in COMPLEX:
        real = values.to(torch.float32)
        return torch.complex(real, -real).to(dtype)
    return values.to(dtype)


def same(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype in COMPLEX:
        a, b = torch.view_as_real(a.to(torch.complex64)), torch.view_as_real(b.to(torch.complex64))
    return torch.equal(a, b)


def expect(got, want, what):
    if not same(got, want):
        raise AssertionError("%s: got %s %s %s, expected %s %s %s" % (
            what, got.dtype, tuple(got.shape), got.flatten()[:8].tolist(), want.dtype,
            tuple(want.shape), want.flatten()[:8].tolist()))


def reference(op, tensors, dtype):
    """The reduction computed locally from every rank's contribution."""
    if dtype == torch.bool:
        stack = torch.stack(tensors)
        return stack.any(0) if op in (hvd.Sum, hvd.Max) else stack.all(0)
    wide = torch.complex128 if dtype in COMPLEX else (
        torch.float64 if dtype.is_floating_point else torch.int64)
    stack = torch.stack([t.to(wide) for t in tensors])
    if op == hvd.Sum:
        out = stack.sum(0)
    elif op == hvd.Average:
        out = stack.sum(0)
        out = out / len(tensors) if (dtype.is_floating_point or dtype in COMPLEX) else \
            torch.div(out, len(tensors), rounding_mode="trunc")  # as Horovod
    elif op == hvd.Min:
        out = stack.min(0).values
    elif op == hvd.Max:
        out = stack.max(0).values
    else:
        out = stack.prod(0)
    return out.to(dtype)


def ops_for(dtype):
    if dtype in COMPLEX:
        return [hvd.Sum, hvd.Average]
    if dtype == torch.bool:
        return [hvd.Sum, hvd.Min, hvd.Max, hvd.Product]
    return [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


# ------------------------------------------------------------------ identity

@check
def identity():
    assert hvd.is_initialized()
    size, rank = hvd.size(), hvd.rank()
    assert 0 <= rank < size, (rank, size)
    assert 0 <= hvd.local_rank() < hvd.local_size() <= size
    assert 0 <= hvd.cross_rank() < hvd.cross_size() <= size
    if "HOROVOD_RANK" in os.environ:  # set by the plugin and by tandem-run
        assert rank == int(os.environ["HOROVOD_RANK"])
        assert size == int(os.environ["HOROVOD_SIZE"])
    ranks = hvd.allgather_object(rank)
    assert ranks == list(range(size)), ranks
    locals_ = hvd.allgather_object((hvd.cross_rank(), hvd.local_rank(), hvd.local_size()))
    assert isinstance(hvd.is_homogeneous(), bool)
    assert hvd.is_homogeneous() == (len({l[2] for l in locals_}) == 1)
    assert len({(c, l) for c, l, _ in locals_}) == size, locals_
    assert hvd.mpi_built() is False and hvd.gloo_built() is False


# ------------------------------------------------------------------ allreduce

@check
def allreduce_every_dtype_and_op():
    size = hvd.size()
    for dtype in ALL:
        for op in ops_for(dtype):
            shape = (3, 5)
            mine = contribution(hvd.rank(), shape, dtype, op)
            want = reference(op, [contribution(r, shape, dtype, op) for r in range(size)],
                             dtype)
            what = "allreduce %s op=%s" % (dtype, op)
            expect(hvd.allreduce(mine, op=op, name="ar.%s.%s" % (dtype, op)), want, what)
            assert same(mine, contribution(hvd.rank(), shape, dtype, op)), \
                what + ": input was modified"
            inplace = mine.clone()
            hvd.allreduce_(inplace, op=op)
            expect(inplace, want, what + " in place")


@check
def allreduce_noncontiguous_and_scales():
    size, rank = hvd.size(), hvd.rank()
    base = contribution(rank, (4, 6), torch.float32)
    t = base.t()  # non-contiguous view
    want = reference(hvd.Sum, [contribution(r, (4, 6), torch.float32).t() for r in range(size)],
                     torch.float32)
    expect(hvd.allreduce(t, op=hvd.Sum), want, "non-contiguous allreduce")
    hvd.allreduce_(t, op=hvd.Sum)
    expect(base.t(), want, "non-contiguous allreduce_ writes through the view")
    x = contribution(rank, (7,), torch.float64)
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    expect(got, reference(hvd.Sum, [contribution(r, (7,), torch.float64) for r in range(size)],
                          torch.float64) * 1.5, "prescale 0.5, postscale 3")
    zero = torch.zeros(0, 3)
    assert hvd.allreduce(zero).shape == (0, 3)
    scalar = torch.tensor(float(rank))
    expect(hvd.allreduce(scalar, op=hvd.Sum), torch.tensor(float(sum(range(size)))), "0-dim")
    # The deprecated average= spelling still works.
    expect(hvd.allreduce(torch.ones(2), average=False), torch.full((2,), float(size)),
           "average=False")


@check
def allreduce_async_poll_synchronize():
    size = hvd.size()
    tensors = [contribution(hvd.rank(), (100 + i,), torch.float32) for i in range(10)]
    handles = [hvd.allreduce_async(t, op=hvd.Sum, name="async.%d" % i)
               for i, t in enumerate(tensors)]
    inplace = [t.clone() for t in tensors]
    handles_ = [hvd.allreduce_async_(t, op=hvd.Max, name="async_.%d" % i)
                for i, t in enumerate(inplace)]
    for i, h in enumerate(handles):
        while not hvd.poll(h):
            pass
        want = reference(hvd.Sum, [contribution(r, (100 + i,), torch.float32)
                                   for r in range(size)], torch.float32)
        expect(hvd.synchronize(h), want, "allreduce_async %d" % i)
    for i, h in enumerate(handles_):
        out = hvd.synchronize(h)
        assert out is inplace[i]
        expect(out, contribution(size - 1, (100 + i,), torch.float32), "allreduce_async_ max")


@check
def grouped_allreduce():
    size, rank = hvd.size(), hvd.rank()
    dtypes = [torch.float32, torch.float64, torch.float16]
    tensors = [contribution(rank, (i + 2, 3), d) for i, d in enumerate(dtypes)]
    wants = [reference(hvd.Average, [contribution(r, (i + 2, 3), d) for r in range(size)], d)
             for i, d in enumerate(dtypes)]
    for got, want in zip(hvd.grouped_allreduce(tensors), wants):
        expect(got, want, "grouped_allreduce")
    copies = [t.clone() for t in tensors]
    hvd.grouped_allreduce_(copies)
    for got, want in zip(copies, wants):
        expect(got, want, "grouped_allreduce_")
    h = hvd.grouped_allreduce_async(tensors, op=hvd.Sum, name="grp")
    for got, t, i in zip(hvd.synchronize(h), tensors, range(3)):
        want = reference(hvd.Sum, [contribution(r, (i + 2, 3), t.dtype) for r in range(size)],
                         t.dtype)
        expect(got, want, "grouped_allreduce_async")


@check
def compression_fp16():
    size = hvd.size()
    x = contribution(hvd.rank(), (33,), torch.float32)
    got = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert got.dtype == torch.float32
    expect(got, reference(hvd.Sum, [contribution(r, (33,), torch.float32)
                                    for r in range(size)], torch.float32), "fp16 compression")


# ------------------------------------------------------------------ allgather

@check
def allgather_every_dtype_uneven():
    size, rank = hvd.size(), hvd.rank()
    for dtype in ALL:
        mine = contribution(rank, (rank + 1, 2, 3), dtype)
        want = torch.cat([contribution(r, (r + 1, 2, 3), dtype) for r in range(size)])
        expect(hvd.allgather(mine, name="ag.%s" % dtype), want, "allgather %s" % dtype)
    even = contribution(rank, (2, 4), torch.float32)
    expect(hvd.synchronize(hvd.allgather_async(even.t())),
           torch.cat([contribution(r, (2, 4), torch.float32).t() for r in range(size)]),
           "allgather_async of a non-contiguous tensor")
    outs = hvd.grouped_allgather([torch.full((rank + 1,), rank), torch.full((1, 2), rank)])
    expect(outs[0], torch.cat([torch.full((r + 1,), r) for r in range(size)]),
           "grouped_allgather 0")
    expect(outs[1], torch.cat([torch.full((1, 2), r) for r in range(size)]),
           "grouped_allgather 1")


# ------------------------------------------------------------------ broadcast

@check
def broadcast_every_dtype_every_root():
    size, rank = hvd.size(), hvd.rank()
    for root in range(size):
        for dtype in ALL:
            mine = contribution(rank, (3, 4), dtype)
            want = contribution(root, (3, 4), dtype)
            expect(hvd.broadcast(mine, root, name="bc.%d.%s" % (root, dtype)), want,
                   "broadcast %s from %d" % (dtype, root))
            assert same(mine, contribution(rank, (3, 4), dtype)), "broadcast modified input"
            hvd.broadcast_(mine, root)
            expect(mine, want, "broadcast_ %s from %d" % (dtype, root))
        base = contribution(rank, (4, 5), torch.float32)
        hvd.synchronize(hvd.broadcast_async_(base.t(), root))
        expect(base, contribution(root, (4, 5), torch.float32), "non-contiguous broadcast_")
        out = hvd.synchronize(hvd.broadcast_async(torch.tensor(rank), root))
        expect(out, torch.tensor(root), "0-dim broadcast_async")


# ------------------------------------------------------------------ alltoall

@check
def alltoall_with_and_without_splits():
    size, rank = hvd.size(), hvd.rank()
    # Equal parts: row block r goes to rank r.
    t = torch.arange(size * 2, dtype=torch.float32).view(size * 2, 1) + 100 * rank
    got = hvd.alltoall(t)
    want = torch.cat([(torch.arange(size * 2, dtype=torch.float32).view(size * 2, 1)
                       + 100 * r)[2 * rank:2 * rank + 2] for r in range(size)])
    expect(got, want, "alltoall equal splits")
    # Rank r sends (r + d) % 3 rows to rank d.
    for dtype in ALL:
        splits = [(rank + d) % 3 for d in range(size)]
        rows = contribution(rank, (sum(splits), 2), dtype)
        out, received = hvd.alltoall(rows, splits=torch.tensor(splits, dtype=torch.int32),
                                     name="a2a.%s" % dtype)
        parts = []
        for r in range(size):
            their = [(r + d) % 3 for d in range(size)]
            start = sum(their[:rank])
            parts.append(contribution(r, (sum(their), 2), dtype)[start:start + their[rank]])
        expect(out, torch.cat(parts), "alltoall splits %s" % dtype)
        assert received.tolist() == [(r + rank) % 3 for r in range(size)], received


# ------------------------------------------------------------ reducescatter

@check
def reducescatter_uneven_rows():
    size, rank = hvd.size(), hvd.rank()
    rows = 2 * size + 1  # uneven on purpose: the first rank gets one more
    for dtype in [torch.float32, torch.float64, torch.int32, torch.int16, torch.complex64]:
        for op in [hvd.Sum, hvd.Average]:
            mine = contribution(rank, (rows, 3), dtype)
            full = reference(op, [contribution(r, (rows, 3), dtype) for r in range(size)],
                             dtype)
            counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
            start = sum(counts[:rank])
            expect(hvd.reducescatter(mine, op=op), full[start:start + counts[rank]],
                   "reducescatter %s op=%s" % (dtype, op))
    outs = hvd.grouped_reducescatter([torch.ones(size, 2) * (rank + 1),
                                      torch.ones(size * 3) * rank], op=hvd.Sum)
    total = sum(range(1, size + 1))
    expect(outs[0], torch.full((1, 2), float(total)), "grouped_reducescatter 0")
    expect(outs[1], torch.full((3,), float(sum(range(size)))), "grouped_reducescatter 1")


# ------------------------------------------------------------------ autograd

@check
def autograd_of_collectives():
    size, rank = hvd.size(), hvd.rank()
    x = torch.full((3,), float(rank + 1), requires_grad=True)
    (hvd.allreduce(x, op=hvd.Sum) * (rank + 1)).sum().backward()
    # d/dx_r of sum_k (k+1) * sum(allreduce) = sum_k (k+1), allreduced (Sum).
    expect(x.grad, torch.full((3,), float(sum(k + 1 for k in range(size)))),
           "allreduce backward")

    x = torch.full((rank + 1, 2), 1.0, requires_grad=True)
    g = hvd.allgather(x)
    (g * torch.arange(g.shape[0], dtype=torch.float32).view(-1, 1)).sum().backward()
    # Horovod's convention: this rank's rows of the gradient averaged over
    # the ranks (the same on every rank here).
    offset = sum(r + 1 for r in range(rank))
    rows = torch.arange(offset, offset + rank + 1, dtype=torch.float32).view(-1, 1)
    expect(x.grad, rows.expand(rank + 1, 2).contiguous(), "allgather backward")

    x = torch.full((2,), float(rank), requires_grad=True)
    hvd.broadcast(x, 0).sum().backward()
    # Horovod's: the averaged gradient on the root, zero elsewhere.
    expect(x.grad, torch.full((2,), 1.0 if rank == 0 else 0.0), "broadcast backward")

    x = torch.arange(size, dtype=torch.float32).requires_grad_()
    out = hvd.alltoall(x)
    (out * (rank + 1)).sum().backward()
    # Element d of x went to rank d, whose loss weighs it by d + 1.
    expect(x.grad, torch.arange(1, size + 1, dtype=torch.float32), "alltoall backward")

    x = torch.ones(size * 2, requires_grad=True)
    (hvd.reducescatter(x, op=hvd.Sum) * (rank + 1)).sum().backward()
    # Horovod's: the allgather of the gradient times the set size for Sum.
    want = torch.tensor([float((r + 1) * size) for r in range(size) for _ in range(2)])
    expect(x.grad, want, "reducescatter backward")


# ------------------------------------------------------- objects, parameters

class Payload:
    """A user's own class: broadcast_object/allgather_object carry any
    picklable object, as Horovod's do (torch.load's weights_only default of
    torch >= 2.6 refuses these)."""

    def __init__(self, rank):
        self.rank, self.tags = rank, {"r%d" % rank, "x"}

    def __eq__(self, other):
        return isinstance(other, Payload) and (other.rank, other.tags) == (self.rank, self.tags)


@check
def objects_and_parameters():
    size, rank = hvd.size(), hvd.rank()
    obj = {"rank": rank, "list": list(range(rank)), "t": torch.full((2,), rank)}
    got = hvd.broadcast_object(obj, root_rank=size - 1)
    assert got["rank"] == size - 1 and got["list"] == list(range(size - 1))
    expect(got["t"], torch.full((2,), size - 1), "broadcast_object tensor")
    gathered = hvd.allgather_object({"r": rank, "s": "x" * rank})
    assert gathered == [{"r": r, "s": "x" * r} for r in range(size)], gathered
    got = hvd.broadcast_object(Payload(rank), root_rank=0, name="payload")
    assert got == Payload(0), vars(got)
    gathered = hvd.allgather_object((Payload(rank), frozenset({rank})), name="payloads")
    assert gathered == [(Payload(r), frozenset({r})) for r in range(size)], gathered

    torch.manual_seed(rank)  # different initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    for (name, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items()):
        expect(a, b, "broadcast_parameters " + name)
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=0)

    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (rank + 1))
    model(torch.randn(5, 4)).sum().backward()
    opt.step()  # state differs per rank (different data, different lr)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    states = hvd.allgather_object(opt.state_dict())
    for other in states:
        assert other["param_groups"][0]["lr"] == 0.01, other["param_groups"][0]["lr"]
        for key, value in other["state"].items():
            for field, tensor in value.items():
                if isinstance(tensor, torch.Tensor):
                    expect(tensor, states[0]["state"][key][field], "optimizer state %s" % field)


# --------------------------------------------------------- DistributedOptimizer

def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _data(rank, n=4):
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(n, 6, generator=g), torch.randn(n, 2, generator=g)


@check
def distributed_optimizer_matches_averaged_gradients():
    size, rank = hvd.size(), hvd.rank()
    for kwargs in [{}, {"op": hvd.Sum}, {"gradient_predivide_factor": 2.0},
                   {"groups": 2}, {"compression": hvd.Compression.fp16},
                   {"backward_passes_per_step": 2}]:
        model = _model()
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters(), **kwargs)
        passes = kwargs.get("backward_passes_per_step", 1)
        for p in range(passes):
            x, y = _data(rank * passes + p)
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        # Reference on one process: every rank's gradient, reduced by hand.
        ref = _model()
        grads = None
        for r in range(size):
            ref.zero_grad()
            for p in range(passes):
                x, y = _data(r * passes + p)
                torch.nn.functional.mse_loss(ref(x), y).backward()
            g = [q.grad.clone() for q in ref.parameters()]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
        divisor = 1.0 if kwargs.get("op") == hvd.Sum else float(size)
        with torch.no_grad():
            for q, g in zip(ref.parameters(), grads):
                q -= 0.1 * g / divisor
        tol = 2e-3 if "compression" in kwargs else 1e-6
        for (name, a), b in zip(model.named_parameters(), ref.parameters()):
            if not torch.allclose(a, b, atol=tol, rtol=0):
                raise AssertionError("DistributedOptimizer(%s) %s differs by %g" % (
                    kwargs, name, (a - b).abs().max().item()))
        everyone = hvd.allgather_object([q.detach() for q in model.parameters()])
        for other in everyone:
            for a, b in zip(other, everyone[0]):
                expect(a, b, "parameters equal on every rank (%s)" % kwargs)


@check
def distributed_optimizer_synchronize_and_sparse():
    size, rank = hvd.size(), hvd.rank()
    model = _model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    x, y = _data(rank)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.synchronize()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    norms = hvd.allgather_object(float(norm))
    assert all(abs(n - norms[0]) < 1e-6 for n in norms), norms  # grads already averaged
    with opt.skip_synchronize():
        opt.step()
    opt.zero_grad()

    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 3, sparse=True)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                   named_parameters=emb.named_parameters(),
                                   sparse_as_dense=True)
    emb(torch.tensor([rank % 10])).sum().backward()
    before = emb.weight.detach().clone()
    opt.step()
    delta = before - emb.weight.detach()
    want = torch.zeros(10, 3)
    for r in range(size):
        want[r % 10] += 1.0 / size
    if not torch.allclose(delta, want, atol=1e-6):
        raise AssertionError("sparse_as_dense: %s" % delta)


# ------------------------------------------------------------------ SyncBatchNorm

@check
def sync_batch_norm_matches_one_big_batch():
    size, rank = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(7)
    full = torch.randn(size * 3, 4, 5, generator=g) * 3 + 1
    weights = torch.randn(size * 3, 4, 5, generator=g)
    mine = full[rank * 3:(rank + 1) * 3].clone().requires_grad_()
    sbn = hvd.SyncBatchNorm(4)
    out = sbn(mine)
    (out * weights[rank * 3:(rank + 1) * 3]).sum().backward()

    ref_in = full.clone().requires_grad_()
    bn = torch.nn.BatchNorm1d(4)
    ref_out = bn(ref_in)
    (ref_out * weights).sum().backward()
    close = lambda a, b: torch.allclose(a, b, atol=1e-4, rtol=1e-4)  # noqa: E731
    assert close(out, ref_out[rank * 3:(rank + 1) * 3]), "SyncBatchNorm forward"
    assert close(mine.grad, ref_in.grad[rank * 3:(rank + 1) * 3]), "SyncBatchNorm input grad"
    assert close(sbn.running_mean, bn.running_mean), "running_mean"
    assert close(sbn.running_var, bn.running_var), "running_var"
    wgrad = hvd.allreduce(sbn.weight.grad, op=hvd.Sum)
    assert close(wgrad, bn.weight.grad), "SyncBatchNorm weight grad (summed over ranks)"
    sbn.eval()
    assert close(sbn(mine.detach()), bn.eval()(full)[rank * 3:(rank + 1) * 3]), "eval mode"


# ------------------------------------------------------------------ errors

def _expect_error(cls, fn, what, contains=()):
    try:
        fn()
    except cls as exc:
        for text in contains:
            assert text in str(exc), "%s: message %r lacks %r" % (what, str(exc), text)
        return exc
    except Exception as exc:  # noqa: BLE001
        raise AssertionError("%s: raised %s (%s), expected %s" % (
            what, type(exc).__name__, exc, cls.__name__))
    raise AssertionError("%s: no error, expected %s" % (what, cls.__name__))


@check
def errors_then_next_call_works():
    import tandem.errors as te
    size, rank = hvd.size(), hvd.rank()
    assert issubclass(te.MismatchError, HorovodInternalError)
    assert issubclass(te.MismatchError, RuntimeError)
    if size > 1:
        # Shapes differ between ranks: every rank gets the named error.
        _expect_error(te.MismatchError,
                      lambda: hvd.allreduce(torch.ones(rank + 1), name="bad.shape"),
                      "mismatched shapes", contains=("bad.shape",))
        expect(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(size)),
               "allreduce after a shape mismatch")
        # Types differ between ranks.
        dtype = torch.float32 if rank == 0 else torch.float64
        _expect_error(te.MismatchError,
                      lambda: hvd.allreduce(torch.ones(2, dtype=dtype), name="bad.type"),
                      "mismatched types", contains=("bad.type",))
        # Broadcast roots differ.
        _expect_error(te.MismatchError,
                      lambda: hvd.broadcast(torch.ones(2), root_rank=rank, name="bad.root"),
                      "mismatched roots", contains=("bad.root",))
        expect(hvd.broadcast(torch.full((2,), float(rank)), 0, name="bad.root"),
               torch.zeros(2), "the failed name is usable again")
    # A name still in flight. It is certain to be in flight only while some
    # other rank has not started it (in a world of one the engine may finish
    # it before the second start: seen under load): rank 0 starts "dupA"
    # twice while the others hold theirs back until the barrier, the others
    # start "dupB" twice while rank 0 holds back.
    if size > 1:
        first, second = ("dupA", "dupB") if rank == 0 else ("dupB", "dupA")
        h = hvd.allreduce_async(torch.ones(4), name=first)
        _expect_error(te.DuplicateNameError,
                      lambda: hvd.allreduce_async(torch.ones(4), name=first),
                      "duplicate name", contains=(first,))
        hvd.barrier()
        h2 = hvd.allreduce_async(torch.ones(4), name=second)
        expect(hvd.synchronize(h), torch.ones(4), "first of the duplicate pair (Average)")
        expect(hvd.synchronize(h2), torch.ones(4), "the other rank's pair")
    # Arguments refused before reaching the engine.
    _expect_error(te.InvalidArgumentError, lambda: hvd.allreduce(torch.ones(2), op=42),
                  "bad op")
    _expect_error(te.InvalidArgumentError, lambda: hvd.allreduce(torch.ones(2, dtype=torch.bool),
                                                                 op=hvd.Average), "bool average")
    _expect_error(te.InvalidArgumentError, lambda: hvd.allreduce([1.0, 2.0]), "not a tensor")
    _expect_error(te.UnsupportedError, lambda: hvd.allreduce(torch.ones(2, device="meta")),
                  "a tensor the engine cannot reach", contains=("meta",))
    if size & (size - 1):
        _expect_error(NotImplementedError,
                      lambda: hvd.allreduce(torch.ones(2), op=hvd.Adasum),
                      "Adasum on a non-power-of-two world", contains=("power of 2",))
    else:  # equal tensors: Adasum gives the tensor back
        expect(hvd.allreduce(torch.full((2,), 3.0), op=hvd.Adasum), torch.full((2,), 3.0),
               "Adasum of equal tensors")
        _expect_error(te.InvalidArgumentError,
                      lambda: hvd.allreduce(torch.ones(2, dtype=torch.int32), op=hvd.Adasum),
                      "Adasum of integers", contains=("floating-point",))
    _expect_error(te.InvalidArgumentError, lambda: hvd.poll(123456789), "bad handle")
    assert hvd.synchronize(123456789) is None  # as Horovod's synchronize
    expect(hvd.allreduce(torch.ones(3), op=hvd.Sum), torch.full((3,), float(size)),
           "allreduce after every error")


# ------------------------------------------------------- sets, join, barrier

@check
def process_sets_join_barrier():
    size, rank = hvd.size(), hvd.rank()
    hvd.barrier()
    if size >= 2:
        evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
        if rank % 2 == 0:
            assert evens.included() and evens.rank() == rank // 2
            # Named: only members call it, so an auto-generated name would
            # make the members' later auto names differ from the others'.
            got = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum, process_set=evens,
                                name="in.evens")
            expect(got, torch.tensor([float(sum(range(0, size, 2)))]), "allreduce in a set")
        else:
            assert not evens.included()
        expect(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.tensor([float(size)]),
               "global set beside another set")
        hvd.remove_process_set(evens)
    # Uneven data: rank r runs r + 1 steps, then joins.
    total = torch.zeros(1)
    for _step in range(rank + 1):
        total += hvd.allreduce(torch.ones(1), op=hvd.Sum, name="join.step")
    last = hvd.join()
    assert last in range(size), last
    # Step s has the ranks r >= s still in it: size - s contributors.
    want = float(sum(size - s for s in range(rank + 1)))
    expect(total, torch.tensor([want]), "allreduce with joined ranks")


@check
def timeline():
    path = os.path.join(tempfile.gettempdir(), "tandem-timeline-%s.json"
                        % hvd.broadcast_object(os.getpid()))
    hvd.start_timeline(path)
    hvd.allreduce(torch.ones(10), name="timeline.tensor")
    hvd.stop_timeline()
    if hvd.rank() == 0:
        with open(path) as f:
            text = f.read()
        os.unlink(path)
        events = json.loads(text if text.rstrip().endswith("]") else text.rstrip(",\n") + "]")
        assert any("timeline.tensor" in json.dumps(e) for e in events), events[:5]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    hvd.init()
    return run_checks([fn for fn in CHECKS if not wanted or fn.__name__ in wanted])


if __name__ == "__main__":
    sys.exit(main())

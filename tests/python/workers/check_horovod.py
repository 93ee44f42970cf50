"""Horovod 0.28's contract as its users' torch code relies on it (docs/python.md),
checked on every rank. Run as N ranks (tandem-run -np N, or srun
--horovod=on); each rank prints "PASS <check> rank R" or "FAIL ..." per check
and exits 1 if any failed. ``--only a,b`` runs a subset; ``--scenario NAME``
runs one of the failure scenarios instead (they end the job).

Every expected value is Horovod's definition, written out here from Horovod's
documented behaviour and its public test suite (test/parallel/test_torch.py),
computed from what every rank contributed: exception types (ValueError for a
duplicate name or a bad argument, HorovodInternalError for a failed
collective), integer scale factors (float64, truncated), sparse allreduce by
allgather, frozen parameters, every collective's gradient convention, join
sequences, and what scripts read off a DistributedOptimizer.

Each check runs all its collectives first and compares afterwards where it
can, so that a wrong value on one rank does not leave the other ranks waiting
in a collective it skipped.

The expectations were checked against Horovod 0.28.1 itself: the worker runs
under Horovod too (`horovodrun -np N --gloo python check_horovod.py`), where
the Tandem-only parts (tandem.errors, build facts) are left out.
"""

import argparse
import os
import sys
import time
import warnings

import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError

try:
    import tandem.errors as te
except ImportError:  # Horovod itself, to check the expectations
    te = None

# Horovod needs this to add process sets after init (its suite sets it too).
os.environ.setdefault("HOROVOD_DYNAMIC_PROCESS_SETS", "1")

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


# Horovod reduces int32 and int64 only; Tandem every integer type.
INTS = [torch.int32, torch.int64] if te is None else \
    [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def expect(got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError("%s: got %s %s %s, expected %s %s %s" % (
            what, got.dtype, tuple(got.shape), got.flatten()[:8].tolist(), want.dtype,
            tuple(want.shape), want.flatten()[:8].tolist()))


def expect_close(got, want, what, tol=1e-5):
    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), atol=tol,
                                                     rtol=0):
        raise AssertionError("%s: got %s %s, expected %s %s" % (
            what, tuple(got.shape), got.flatten()[:8].tolist(), tuple(want.shape),
            want.flatten()[:8].tolist()))


def raises(cls, fn, what):
    try:
        fn()
    except cls as exc:
        return exc
    except Exception as exc:  # noqa: BLE001
        raise AssertionError("%s: raised %s (%s), expected %s" % (
            what, type(exc).__name__, exc, cls.__name__))
    raise AssertionError("%s: no error, expected %s" % (what, cls.__name__))


def even_odd_sets():
    """Horovod's suite's sets: even and odd global ranks (size >= 2)."""
    size, rank = hvd.size(), hvd.rank()
    even = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
    odd = hvd.add_process_set([r for r in range(size) if r % 2 == 1])
    return even, odd, (even if rank % 2 == 0 else odd)


def set_ranks(ps):
    return [r for r in range(hvd.size()) if r % 2 == hvd.rank() % 2] if ps is not None \
        else list(range(hvd.size()))


# ------------------------------------------------------------ built facts (item 2)

@check
def built_facts_keep_horovods_types():
    code = hvd.nccl_built()
    assert type(code) is int, "nccl_built() is %r (%s), Horovod returns an int" % (
        code, type(code).__name__)
    facts = None
    if te is not None:
        from tandem import _basics, _built
        facts = _basics.loaded_build_info()
    if facts is not None:  # the build tree's facts describe the loaded library
        want = _built.nccl_version_code(facts["nccl_headers"]) if facts["cuda_headers"] else 0
        assert code == want, "nccl_built() %d, build facts say %r" % (code, facts)
    assert (code != 0) == hvd.cuda_built(), (code, hvd.cuda_built())
    # Horovod's suite skips alltoall where 0 < nccl_built() < 2700.
    assert code == 0 or code >= 2700, code
    for fn in (hvd.mpi_built, hvd.mpi_enabled, hvd.gloo_built, hvd.gloo_enabled,
               hvd.ccl_built, hvd.ddl_built, hvd.rocm_built, hvd.cuda_built):
        value = fn()
        assert type(value) is bool, "%s() is %r, Horovod returns a bool" % (fn.__name__, value)
        if fn is not hvd.cuda_built and te is not None:
            assert value is False, "%s() is %r under Tandem" % (fn.__name__, value)
    exc = raises(ValueError, hvd.mpi_threads_supported, "mpi_threads_supported without MPI")
    assert "MPI is not enabled" in str(exc), str(exc)


# ------------------------------------------------- exception types (items 3, 4)

@check
def exception_types_are_horovods():
    size, rank = hvd.size(), hvd.rank()
    assert hvd.HorovodInternalError is HorovodInternalError
    assert issubclass(HorovodInternalError, RuntimeError)
    assert te is None or issubclass(HorovodInternalError, te.TandemError)
    for cls in (te._populate() or te._by_code.values()) if te is not None else ():
        if cls.name in ("TANDEM_ERR_INVALID_ARGUMENT", "TANDEM_ERR_DUPLICATE_NAME"):
            assert issubclass(cls, ValueError) and issubclass(cls, te.TandemError), cls
            assert not issubclass(cls, HorovodInternalError), cls
        else:  # every engine failure, including codes added later
            assert issubclass(cls, HorovodInternalError), cls
            assert not issubclass(cls, ValueError), cls

    t = torch.ones(size * 2, 3)
    starts = {
        "allreduce": lambda n: hvd.allreduce_async(t, name=n),
        "allreduce_": lambda n: hvd.allreduce_async_(t.clone(), name=n),
        "grouped_allreduce": lambda n: hvd.grouped_allreduce_async([t, t * 2], name=n),
        "allgather": lambda n: hvd.allgather_async(t, name=n),
        "grouped_allgather": lambda n: hvd.grouped_allgather_async([t, t], name=n),
        "broadcast": lambda n: hvd.broadcast_async(t, 0, name=n),
        "alltoall": lambda n: hvd.alltoall_async(t, name=n),
        "reducescatter": lambda n: hvd.reducescatter_async(t, name=n),
        "grouped_reducescatter": lambda n: hvd.grouped_reducescatter_async([t], name=n),
    }
    handles, errors_seen = [], []

    def start_twice(prefix):
        for kind, start in starts.items():
            handles.append(start(prefix + kind))
            try:  # still in flight: Horovod raises ValueError
                start(prefix + kind)
                errors_seen.append((kind, None))
            except Exception as exc:  # noqa: BLE001 (compared below)
                errors_seen.append((kind, exc))

    # A name stays in flight until its collective completes, which it can
    # only do once every rank has started it. So each rank's second start
    # is certain to find the first in flight only while some other rank has
    # not started it yet: rank 0 starts "dupA.*" twice while the others hold
    # theirs back until the barrier, and the others start "dupB.*" twice
    # while rank 0 holds back. In a world of one a collective may complete
    # before the second start (Horovod's suite skips these tests there).
    if size > 1:
        start_twice("dupA." if rank == 0 else "dupB.")
        hvd.barrier()
        for kind, start in starts.items():
            handles.append(start(("dupB." if rank == 0 else "dupA.") + kind))
    # Each kind has its own names, as in Horovod: these may be in flight together.
    handles.append(hvd.allreduce_async(t, name="same"))
    handles.append(hvd.broadcast_async(t, 0, name="same"))
    handles.append(hvd.allgather_async(t, name="same"))
    for h in handles:
        hvd.synchronize(h)
    for kind, exc in errors_seen:
        assert isinstance(exc, ValueError), "duplicate %s: %r is not a ValueError" % (kind, exc)
        assert te is None or isinstance(exc, te.DuplicateNameError), (kind, exc)
        assert not isinstance(exc, HorovodInternalError), (kind, exc)

    # Arguments Horovod refuses with ValueError.
    raises(ValueError, lambda: hvd.alltoall(torch.ones(size), splits=torch.ones(size)),
           "alltoall splits of float type")
    raises(ValueError, lambda: hvd.alltoall(torch.ones(max(size - 1, 0)),
                                            splits=torch.ones(size, dtype=torch.int32)),
           "alltoall splits summing past the first dimension")
    raises(ValueError, lambda: hvd.reducescatter(torch.tensor(1.0)), "reducescatter of a scalar")
    raises(ValueError, lambda: hvd.allreduce(torch.ones(2), average=True, op=hvd.Sum),
           "both op and average")
    raises(ValueError, lambda: hvd.poll(987654321), "poll of an unknown handle")
    assert hvd.synchronize(987654321) is None, "Horovod's synchronize of an unknown handle"
    if size > 1:
        raises(ValueError, lambda: hvd.alltoall(torch.ones(size + 1)),
               "alltoall without splits, first dimension not a multiple of the size")
        # Ranks disagree: a failed collective, caught as Horovod's scripts do.
        exc = raises(HorovodInternalError,
                     lambda: hvd.allreduce(torch.ones(rank + 1), name="contract.mismatch"),
                     "shapes differ between ranks")
        assert isinstance(exc, RuntimeError) and not isinstance(exc, ValueError), exc
        exc = raises(HorovodInternalError,
                     lambda: hvd.broadcast(torch.ones(2), rank, name="contract.roots"),
                     "roots differ between ranks")
    raises(RuntimeError, lambda: hvd.reducescatter(torch.ones(size * 2), op=hvd.Adasum),
           "reducescatter with Adasum")
    expect(hvd.allreduce(torch.ones(3), op=hvd.Sum, name="contract.after"),
           torch.full((3,), float(size)), "allreduce after every error")


@check
def deprecated_average_warns_as_horovod():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hvd.allreduce(torch.ones(2), average=False)
    texts = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any("Parameter `average` has been replaced with `op` and will be removed in v1.0"
               in t for t in texts), texts


# ----------------------------------------------- integer scale factors (item 5)

def int_contribution(rank, shape, dtype, salt=0):
    n = 1
    for d in shape:
        n *= d
    idx = torch.arange(n, dtype=torch.int64).reshape(shape)
    values = (idx * 3 + rank * 5 + salt) % 15 - 7  # -7..7, odd sums included
    if dtype == torch.uint8:
        values = values.abs()
    return values.to(dtype)


def horovod_int_reduce(op, tensors, prescale, postscale, size):
    """Horovod on integer tensors: each rank's input times the prescale in
    float64, truncated; reduced (Average = Sum); times the postscale (/size
    for Average) in float64, truncated."""
    dtype = tensors[0].dtype
    if prescale != 1.0:
        tensors = [(t.double() * prescale).to(dtype) for t in tensors]
    stack = torch.stack([t.to(torch.int64) for t in tensors])
    if op in (hvd.Sum, hvd.Average):
        out = stack.sum(0)
    elif op == hvd.Min:
        out = stack.min(0).values
    else:
        out = stack.max(0).values
    out = out.to(dtype)
    factor = postscale / size if op == hvd.Average else postscale
    if factor != 1.0:
        out = (out.double() * factor).to(dtype)
    return out


@check
def integer_scale_factors_as_horovod():
    size, rank = hvd.size(), hvd.rank()
    results = []
    for dtype in INTS:
        for pre, post in [(1.0, 1.0), (0.37, 1.0), (1.0, 0.61), (2.5, 0.3)]:
            for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max):
                shape = (5, 3)
                mine = int_contribution(rank, shape, dtype)
                want = horovod_int_reduce(op, [int_contribution(r, shape, dtype)
                                               for r in range(size)], pre, post, size)
                what = "%s pre=%s post=%s op=%s" % (dtype, pre, post, op)
                got = hvd.allreduce(mine, op=op, prescale_factor=pre, postscale_factor=post)
                inplace = mine.clone()
                hvd.allreduce_(inplace, op=op, prescale_factor=pre, postscale_factor=post)
                # A non-contiguous input (Horovod refuses those; Tandem copies).
                strided = int_contribution(rank, (3, 5), dtype).t()
                if te is None:
                    strided = strided.contiguous()
                got_t = hvd.allreduce(strided, op=op, prescale_factor=pre, postscale_factor=post)
                want_t = horovod_int_reduce(op, [int_contribution(r, (3, 5), dtype).t()
                                                 for r in range(size)], pre, post, size)
                other = int_contribution(rank, (4,), dtype, salt=1)
                want_other = horovod_int_reduce(op, [int_contribution(r, (4,), dtype, salt=1)
                                                     for r in range(size)], pre, post, size)
                grouped = hvd.grouped_allreduce([mine, other], op=op, prescale_factor=pre,
                                                postscale_factor=post)
                results += [(got, want, "allreduce " + what),
                            (inplace, want, "allreduce_ " + what),
                            (got_t, want_t, "allreduce of a transposed tensor " + what),
                            (grouped[0], want, "grouped_allreduce[0] " + what),
                            (grouped[1], want_other, "grouped_allreduce[1] " + what)]
                if op not in (hvd.Sum, hvd.Average):
                    continue
                rows = 2 * size + 1  # uneven: the first ranks get one more row
                rs_mine = int_contribution(rank, (rows, 2), dtype)
                full = horovod_int_reduce(op, [int_contribution(r, (rows, 2), dtype)
                                               for r in range(size)], pre, post, size)
                counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
                start = sum(counts[:rank])
                got_rs = hvd.reducescatter(rs_mine, op=op, prescale_factor=pre,
                                           postscale_factor=post)
                got_grs = hvd.grouped_reducescatter([rs_mine, rs_mine], op=op,
                                                    prescale_factor=pre, postscale_factor=post)
                for g, label in [(got_rs, "reducescatter "), (got_grs[0], "grouped_rs[0] "),
                                 (got_grs[1], "grouped_rs[1] ")]:
                    results.append((g, full[start:start + counts[rank]], label + what))
    for got, want, what in results:
        expect(got, want, what)


# ------------------------------------------------------ sparse gradients (item 6)

def sparse_contribution(rank, rows, seed):
    g = torch.Generator().manual_seed(seed * 100 + rank)
    dense = torch.rand(rows, 4, generator=g)
    dense[dense < 0.7] = 0
    if rank == 0 and seed == 1:
        dense.zero_()  # a rank with no entries at all
    return dense.to_sparse()


@check
def sparse_allreduce_gathers_indices_and_values():
    size, rank = hvd.size(), hvd.rank()
    results = []
    for op in (hvd.Average, hvd.Sum):
        for seed, rows in enumerate([17, 5, 32]):
            mine = sparse_contribution(rank, rows, seed)
            handle = hvd.sparse_allreduce_async(mine, name="sparse.%d.%d" % (op, seed), op=op)
            out = handle()
            total = sum(sparse_contribution(r, rows, seed).to_dense() for r in range(size))
            want = total / size if op == hvd.Average else total
            results.append((out, want, "sparse_allreduce op=%s seed=%d" % (op, seed)))
    for out, want, what in results:
        assert out.is_sparse, what + ": the result is not sparse"
        expect_close(out.to_dense(), want, what, 1e-6)


def embedding_batch(rank):
    # Different lengths and repeated rows, as in Horovod's suite.
    return torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]]) if rank % 2 == 0 else \
        torch.tensor([[1, 3, 4], [4, 7, 9 - rank % 3]])


@check
def sparse_gradients_through_distributed_optimizer():
    size, rank = hvd.size(), hvd.rank()
    results = []
    for opt_cls in (torch.optim.SparseAdam, torch.optim.SGD):
        for sparse_as_dense in (False, True):
            torch.manual_seed(0)
            emb = torch.nn.Embedding(10, 3, sparse=True)
            opt = hvd.DistributedOptimizer(opt_cls(list(emb.parameters()), lr=0.1),
                                           sparse_as_dense=sparse_as_dense)
            weights = torch.arange(3, dtype=torch.float32) + rank
            loss = (emb(embedding_batch(rank)) * weights).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            grad_is_sparse = emb.weight.grad.is_sparse
            # One process, the gradient averaged over every rank's batch.
            torch.manual_seed(0)
            ref = torch.nn.Embedding(10, 3, sparse=True)
            ref_opt = opt_cls(list(ref.parameters()), lr=0.1)
            dense = torch.zeros(10, 3)
            for r in range(size):
                ref.zero_grad()
                (ref(embedding_batch(r)) * (torch.arange(3, dtype=torch.float32) + r)) \
                    .sum().backward()
                dense += ref.weight.grad.to_dense()
            ref.weight.grad = (dense / size).to_sparse()
            ref_opt.step()
            everyone = hvd.allgather_object(emb.weight.detach())
            results.append((opt_cls.__name__, sparse_as_dense, grad_is_sparse,
                            emb.weight.detach(), ref.weight.detach(), everyone))
    for name, as_dense, grad_is_sparse, got, want, everyone in results:
        what = "%s sparse_as_dense=%s" % (name, as_dense)
        assert grad_is_sparse, what + ": the gradient is no longer sparse after step()"
        expect_close(got, want, what, 1e-6)
        for other in everyone:
            expect(other, everyone[0], what + ": parameters equal on every rank")


# --------------------------------------------------- frozen parameters (item 7)

def small_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3),
                               torch.nn.Linear(3, 2))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 + 10 * rank + step)
    return torch.randn(6, 4, generator=g), torch.randn(6, 2, generator=g)


@check
def frozen_parameters_are_skipped():
    size, rank = hvd.size(), hvd.rank()
    model = small_model(rank)  # different weights on every rank
    for p in model[0].parameters():
        p.requires_grad_(False)  # a frozen backbone layer
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.05 * (rank + 1), momentum=0.9),
        named_parameters=model.named_parameters())
    # Fresh optimizer: Horovod initializes its state before broadcasting it.
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    frozen_none = [p.grad is None for p in model[0].parameters()]
    trainable_zero = [p.grad is not None and torch.equal(p.grad, torch.zeros_like(p))
                      for p in list(model[2].parameters()) + list(model[3].parameters())]
    state_size = len(opt.state_dict()["state"])
    lr = opt.param_groups[0]["lr"]
    for step in range(3):
        x, y = batch(rank, step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    # The same again with the Horovod signature's positional model argument
    # and parameters given as a list of tensors.
    hvd.broadcast_optimizer_state(opt, 0, model)
    hvd.broadcast_parameters(list(model.parameters()), root_rank=0)
    everyone = hvd.allgather_object([p.detach() for p in model.parameters()])

    # One process: rank 0's initial weights, the initialization step, then
    # each step's gradients averaged over the ranks' batches.
    ref = small_model(0)
    for p in ref[0].parameters():
        p.requires_grad_(False)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for p in ref.parameters():
        if p.requires_grad:
            p.grad = torch.zeros_like(p)
    ref_opt.step()
    for step in range(3):
        grads = None
        for r in range(size):
            ref_opt.zero_grad()
            x, y = batch(r, step)
            torch.nn.functional.mse_loss(ref(x), y).backward()
            g = [p.grad.clone() for p in ref.parameters() if p.requires_grad]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
        for p, g in zip([p for p in ref.parameters() if p.requires_grad], grads):
            p.grad = g / size
        ref_opt.step()

    assert all(frozen_none), "a frozen parameter got a gradient"
    assert all(trainable_zero), \
        "broadcast_optimizer_state leaves zero gradients on trainable parameters"
    assert state_size == 4, "optimizer state for %d parameters, expected the 4 trainable" \
        % state_size
    assert lr == 0.05, "the root's learning rate is broadcast, got %s" % lr
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        expect_close(p.detach(), q.detach(), "parameter %s after 3 steps" % name, 1e-5)
    for other in everyone:
        for a, b in zip(other, everyone[0]):
            expect(a, b, "parameters equal on every rank")


@check
def requires_grad_switched_at_run_time():
    # A GAN-style pair: each optimizer steps only the part being trained.
    size = hvd.size()
    torch.manual_seed(3)
    gen, disc = torch.nn.Linear(3, 4), torch.nn.Linear(4, 1)
    gen_opt = hvd.DistributedOptimizer(torch.optim.SGD(gen.parameters(), lr=0.1),
                                       named_parameters=gen.named_parameters())
    disc_opt = hvd.DistributedOptimizer(torch.optim.SGD(disc.parameters(), lr=0.1),
                                        named_parameters=disc.named_parameters())
    x = torch.ones(2, 3) * (hvd.rank() + 1)
    seen = []
    for step in range(4):
        train_gen = step % 2 == 0
        for p in gen.parameters():
            p.requires_grad_(train_gen)
        for p in disc.parameters():
            p.requires_grad_(not train_gen)
        gen_opt.zero_grad()
        disc_opt.zero_grad()
        disc(gen(x)).sum().backward()
        seen.append([p.grad is not None and bool(p.grad.abs().max() > 0)
                     for p in gen.parameters()])
        (gen_opt if train_gen else disc_opt).step()
    everyone = hvd.allgather_object([p.detach() for p in list(gen.parameters())
                                     + list(disc.parameters())])
    for step, flags in enumerate(seen):
        assert all(flags) == (step % 2 == 0), (step, flags)
    for other in everyone:
        for a, b in zip(other, everyone[0]):
            expect(a, b, "parameters equal on every rank (%d ranks)" % size)


# ------------------------------------------------------ gradients (item 8)

def upstream(rank, shape, salt):
    g = torch.Generator().manual_seed(7000 + 31 * rank + salt)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def horovod_float_reduce(op, tensors, prescale=1.0, postscale=1.0):
    stack = torch.stack([t * prescale for t in tensors])
    if op == hvd.Sum:
        out = stack.sum(0)
    elif op == hvd.Average:
        out = stack.mean(0)
    elif op == hvd.Min:
        out = stack.min(0).values
    else:
        out = stack.max(0).values
    return out * postscale


def gradient_cases(ps):
    """(what, got, want) of every collective's gradient over ``ps`` (None:
    the global set), each with an incoming gradient that differs by rank."""
    rank = hvd.rank()
    members = set_ranks(ps)
    me = members.index(rank)
    kwargs = {} if ps is None else {"process_set": ps}
    tag = "global" if ps is None else "set %s" % members
    cases = []

    for op in (hvd.Average, hvd.Sum, hvd.Min, hvd.Max):
        for pre, post in [(1.0, 1.0), (0.5, 3.0)]:
            x = torch.full((4,), float(rank + 1), dtype=torch.float64, requires_grad=True)
            out = hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post, **kwargs)
            out.backward(upstream(rank, (4,), op))
            want = horovod_float_reduce(op, [upstream(r, (4,), op) for r in members], pre, post)
            cases.append(("allreduce op=%s pre=%s post=%s %s" % (op, pre, post, tag),
                          x.grad, want))

    xs = [torch.ones(3, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum, **kwargs)
    for i, o in enumerate(outs):
        o.backward(upstream(rank, (3,), 10 + i))
    for i, x in enumerate(xs):
        cases.append(("grouped_allreduce[%d] %s" % (i, tag), x.grad,
                      sum(upstream(r, (3,), 10 + i) for r in members)))

    for root in members:
        x = torch.ones(3, dtype=torch.float64, requires_grad=True)
        hvd.broadcast(x, root, **kwargs).backward(upstream(rank, (3,), 20 + root))
        mean = sum(upstream(r, (3,), 20 + root) for r in members) / len(members)
        cases.append(("broadcast from %d %s" % (root, tag), x.grad,
                      mean if rank == root else mean * 0))

    rows = [r + 1 for r in members]  # uneven first dimensions
    total = sum(rows)
    start = sum(rows[:me])
    x = torch.ones(rows[me], 2, dtype=torch.float64, requires_grad=True)
    hvd.allgather(x, **kwargs).backward(upstream(rank, (total, 2), 30))
    mean = sum(upstream(r, (total, 2), 30) for r in members) / len(members)
    cases.append(("allgather uneven %s" % tag, x.grad, mean[start:start + rows[me]]))

    xs = [torch.ones(rows[me], 2, dtype=torch.float64, requires_grad=True),
          torch.ones(rows[me], dtype=torch.float64, requires_grad=True)]
    outs = hvd.grouped_allgather(xs, **kwargs)
    assert all(o.grad_fn is not None for o in outs), "grouped_allgather is not differentiable"
    torch.autograd.backward(outs, [upstream(rank, (total, 2), 31), upstream(rank, (total,), 32)])
    for i, (x, shape) in enumerate(zip(xs, [(total, 2), (total,)])):
        mean = sum(upstream(r, shape, 31 + i) for r in members) / len(members)
        cases.append(("grouped_allgather[%d] %s" % (i, tag), x.grad,
                      mean[start:start + rows[me]]))

    n = len(members)
    splits_of = {r: [(r + d) % 3 for d in range(n)] for r in members}  # rows r sends to d
    mine = splits_of[rank]
    x = torch.ones(sum(mine), 2, dtype=torch.float64, requires_grad=True)
    out, received = hvd.alltoall(x, splits=torch.tensor(mine, dtype=torch.int32), **kwargs)
    out.backward(upstream(rank, tuple(out.shape), 40))
    # Block j of x (rows for the j-th member) comes back from that member:
    # the rows of its incoming gradient that came from this rank.
    parts = []
    for j, r in enumerate(members):
        theirs = [splits_of[s][j] for s in members]  # what r received from each member
        g = upstream(r, (sum(theirs), 2), 40)
        begin = sum(theirs[:me])
        parts.append(g[begin:begin + mine[j]])
    cases.append(("alltoall with splits %s" % tag, x.grad, torch.cat(parts)))

    rows = 2 * n + 1
    counts = [rows // n + (1 if i < rows % n else 0) for i in range(n)]
    for op in (hvd.Sum, hvd.Average):
        for pre, post in [(1.0, 1.0), (0.5, 3.0)]:
            x = torch.ones(rows, 2, dtype=torch.float64, requires_grad=True)
            out = hvd.reducescatter(x, op=op, prescale_factor=pre, postscale_factor=post,
                                    **kwargs)
            out.backward(upstream(rank, (counts[me], 2), 50 + op))
            factor = (n if op == hvd.Sum else 1) * pre * post
            want = torch.cat([upstream(r, (counts[i], 2), 50 + op)
                              for i, r in enumerate(members)]) * factor
            cases.append(("reducescatter op=%s pre=%s post=%s %s" % (op, pre, post, tag),
                          x.grad, want))
            xs = [torch.ones(rows, 2, dtype=torch.float64, requires_grad=True)
                  for _ in range(2)]
            outs = hvd.grouped_reducescatter(xs, op=op, prescale_factor=pre,
                                             postscale_factor=post, **kwargs)
            assert all(o.grad_fn is not None for o in outs), \
                "grouped_reducescatter is not differentiable"
            torch.autograd.backward(outs, [upstream(rank, (counts[me], 2), 60 + i)
                                           for i in range(2)])
            for i, x in enumerate(xs):
                want = torch.cat([upstream(r, (counts[k], 2), 60 + i)
                                  for k, r in enumerate(members)]) * factor
                cases.append(("grouped_reducescatter[%d] op=%s pre=%s post=%s %s"
                              % (i, op, pre, post, tag), x.grad, want))
    return cases


@check
def gradients_follow_horovods_conventions():
    cases = gradient_cases(None)
    if hvd.size() >= 2:
        even, odd, mine = even_odd_sets()
        cases += gradient_cases(mine)
        hvd.remove_process_set(odd)
        hvd.remove_process_set(even)
    for what, got, want in cases:
        assert got is not None, what + ": no gradient"
        expect_close(got, want, what, 1e-9)


# ------------------------------------------- sequences of Horovod's suite (item 9)

@check
def join_sequences_complete_on_every_rank():
    size, rank = hvd.size(), hvd.rank()
    outcomes = []
    for first in range(size):
        for kind in ("allreduce", "allgather", "broadcast"):
            a = torch.full((5,), float(rank + 1)) - 3.0
            b = (torch.arange(7) * (rank + 1) - 5).to(torch.int32)
            got = None
            if rank == first:
                # Horovod's suite passes the local rank as the device; on a
                # CPU-only node that is the CPU.
                last = hvd.join(hvd.local_rank())
            else:
                if kind == "allreduce":
                    ha = hvd.allreduce_async(a, name="join.a")
                    hb = hvd.allreduce_async(b, name="join.b")
                    got = (hvd.synchronize(ha), hvd.synchronize(hb))
                else:
                    # A rank has joined: Horovod fails these on the others.
                    # Named: an unnamed collective called by only some ranks
                    # draws different names on different ranks at 3 ranks
                    # and more (Horovod then waits forever, as Tandem does).
                    try:
                        if kind == "allgather":
                            hvd.allgather(a, name="join.allgather.%d" % first)
                        else:
                            hvd.broadcast(a, rank, name="join.broadcast.%d" % first)
                        got = "no error"
                    except HorovodInternalError as exc:
                        got = exc
                last = hvd.join()
            lasts = hvd.allgather_object(last)
            outcomes.append((first, kind, got, last, lasts))
    for first, kind, got, last, lasts in outcomes:
        what = "%s with rank %d joined first" % (kind, first)
        assert lasts == [last] * size, "%s: join returned %s" % (what, lasts)
        if size > 1:
            assert last != first, "%s: the first to join is not the last" % what
        if got is None:
            continue
        if kind == "allreduce":
            others = [r for r in range(size) if r != first]
            # Average over the set size with the joined rank contributing zeros;
            # integers truncated as Horovod does.
            want_a = sum(torch.full((5,), float(r + 1)) - 3.0 for r in others) / size
            sum_b = sum((torch.arange(7) * (r + 1) - 5).to(torch.int32) for r in others)
            want_b = (sum_b.double() * (1.0 / size)).to(torch.int32)
            expect_close(got[0], want_a, what + " (float)")
            expect(got[1], want_b, what + " (int32)")
        else:
            assert isinstance(got, RuntimeError), "%s: %r, expected a failure" % (what, got)


@check
def process_sets_added_and_removed_in_sequence():
    size, rank = hvd.size(), hvd.rank()
    hvd.init(process_sets="dynamic")  # Horovod's spelling; a second init is a no-op
    if size < 2:
        return
    sums = []
    for round_ in range(3):
        even, odd, mine = even_odd_sets()
        members = set_ranks(mine)
        x = torch.full((3,), float(rank))
        handle = hvd.allreduce_async(x, op=hvd.Sum, process_set=mine, name="round.%d" % round_)
        gathered = hvd.allgather(torch.tensor([rank]), process_set=mine)
        got = hvd.broadcast_object({"from": members[0]}, root_rank=members[0], process_set=mine)
        sums.append((hvd.synchronize(handle), members, gathered, got))
        removed = [hvd.remove_process_set(odd), hvd.remove_process_set(even)]
        # Horovod's answers: False for a set no longer registered and for the
        # global set, which is never removed.
        removed += [hvd.remove_process_set(odd), hvd.remove_process_set(hvd.global_process_set)]
    hvd.barrier()
    assert removed == [True, True, False, False], removed
    for total, members, gathered, got in sums:
        expect(total, torch.full((3,), float(sum(members))), "allreduce in set %s" % members)
        expect(gathered, torch.tensor(members), "allgather in set %s" % members)
        assert got == {"from": members[0]}, got


# --------------------------------------- what scripts read off the optimizer (item 10)

@check
def distributed_optimizer_as_horovods():
    size = hvd.size()
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.Linear(10, 10))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(
        [{"params": model[0].parameters()}, {"params": model[1].parameters()}], lr=0.001))
    names = opt._parameter_names
    assert len(names) == 4 and len(set(names.values())) == 4, names
    assert set(names.values()) == {"allreduce.noname.%d.%d" % (i, j)
                                   for i in range(2) for j in range(2)}, names
    assert names[model[1].bias] == "allreduce.noname.1.1", names
    everyone = hvd.allgather_object(sorted(names.values()))
    attrs = dict(backward_passes_per_step=opt.backward_passes_per_step, op=opt.op,
                 gradient_predivide_factor=opt.gradient_predivide_factor,
                 sparse_as_dense=opt.sparse_as_dense, groups=opt._groups,
                 delay=sorted(opt._allreduce_delay.values()))
    opt2 = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                    named_parameters=model.named_parameters(),
                                    backward_passes_per_step=2, op=hvd.Sum, groups=2)
    opt2.set_backward_passes_per_step(3)
    delays2 = set(opt2._allreduce_delay.values())
    named = sorted(opt2._parameter_names.values())

    # step() after synchronize() warns once, in Horovod's words.
    torch.manual_seed(0)
    lin = torch.nn.Linear(1, 1)
    hvd.broadcast_parameters(lin.state_dict(), root_rank=0)
    opt3 = hvd.DistributedOptimizer(torch.optim.SGD(lin.parameters(), lr=0.1),
                                    named_parameters=lin.named_parameters())
    torch.nn.functional.mse_loss(lin(torch.zeros(1, 1)), torch.ones(1, 1)).backward()
    opt3.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt3.step()
    with warnings.catch_warnings(record=True) as quiet:
        warnings.simplefilter("always")
        opt3.zero_grad()
        torch.nn.functional.mse_loss(lin(torch.zeros(1, 1)), torch.ones(1, 1)).backward()
        opt3.synchronize()
        with opt3.skip_synchronize():
            opt3.step()
    hooked = len(opt3._requires_update)

    for other in everyone:
        assert other == everyone[0], "parameter names differ between ranks: %s" % everyone
    assert attrs == dict(backward_passes_per_step=1, op=hvd.Average,
                         gradient_predivide_factor=1.0, sparse_as_dense=False, groups=None,
                         delay=[1, 1, 1, 1]), attrs
    assert opt.process_set is hvd.global_process_set
    assert opt2._groups == 2 and opt2.op == hvd.Sum and opt2.backward_passes_per_step == 3, \
        (opt2._groups, opt2.op, opt2.backward_passes_per_step)
    assert delays2 == {3}, delays2
    assert named == ["0.bias", "0.weight", "1.bias", "1.weight"], named
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert "optimizer.step() called without optimizer.skip_synchronize()" \
        in str(caught[0].message), str(caught[0].message)
    assert not quiet, [str(w.message) for w in quiet]
    # As in Horovod, a world of one reduces nothing (no hooks).
    assert hooked == (2 if size > 1 else 0), hooked


@check
def grouped_gradients_and_accumulation():
    size, rank = hvd.size(), hvd.rank()
    for kwargs in [{"groups": 2}, {"groups": [[]]}, {"backward_passes_per_step": 2},
                   {"gradient_predivide_factor": 2.0}, {"op": hvd.Sum}]:
        model = small_model(0)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters(), **kwargs)
        passes = kwargs.get("backward_passes_per_step", 1)
        for p in range(passes):
            x, y = batch(rank, p)
            torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        ref = small_model(0)
        grads = None
        for r in range(size):
            ref.zero_grad()
            for p in range(passes):
                x, y = batch(r, p)
                torch.nn.functional.mse_loss(ref(x), y).backward()
            g = [q.grad.clone() for q in ref.parameters()]
            grads = g if grads is None else [a + b for a, b in zip(grads, g)]
        divisor = 1.0 if kwargs.get("op") == hvd.Sum else float(size)
        with torch.no_grad():
            for q, g in zip(ref.parameters(), grads):
                q -= 0.1 * g / divisor
        for (name, a), b in zip(model.named_parameters(), ref.parameters()):
            expect_close(a.detach(), b.detach(), "DistributedOptimizer(%s) %s" % (kwargs, name),
                         1e-6)


# ------------------------------------------------------------------ scenarios

def scenario_lost_peer():
    """The last rank disappears (no shutdown); every other rank's pending
    collective fails with HorovodInternalError, the elastic idiom's catch."""
    size, rank = hvd.size(), hvd.rank()
    hvd.barrier()
    if rank == size - 1:
        print("PASS lost_peer rank %d (the lost rank)" % rank, flush=True)
        os._exit(0)
    start = time.monotonic()
    try:
        hvd.allreduce(torch.ones(4), name="never.completes")
        print("FAIL lost_peer rank %d: the allreduce completed" % rank, flush=True)
        return 1
    except hvd.HorovodInternalError as exc:  # the elastic idiom's catch
        print("PASS lost_peer rank %d: %s after %.1f s: %s"
              % (rank, type(exc).__name__, time.monotonic() - start, exc), flush=True)
        return 0


def scenario_aborted():
    """The last rank shuts Horovod down while the others wait in an
    allreduce: their collective is aborted with HorovodInternalError."""
    size, rank = hvd.size(), hvd.rank()
    hvd.barrier()
    if rank == size - 1:
        time.sleep(0.5)
        hvd.shutdown()
        print("PASS aborted rank %d (shut down)" % rank, flush=True)
        return 0
    try:
        hvd.allreduce(torch.ones(4), name="aborted.by.shutdown")
        print("FAIL aborted rank %d: the allreduce completed" % rank, flush=True)
        return 1
    except hvd.HorovodInternalError as exc:
        print("PASS aborted rank %d: %s: %s" % (rank, type(exc).__name__, exc), flush=True)
        return 0


SCENARIOS = {"lost_peer": scenario_lost_peer, "aborted": scenario_aborted}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS))
    args = parser.parse_args()
    hvd.init()
    if args.scenario:
        return SCENARIOS[args.scenario]()
    wanted = set(filter(None, args.only.split(",")))
    return run_checks([fn for fn in CHECKS if not wanted or fn.__name__ in wanted])


if __name__ == "__main__":
    sys.exit(main())

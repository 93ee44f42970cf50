"""CUDA tensors through horovod.torch, on every rank (tandem-run -np N or
srun --horovod=on). Each rank prints "PASS <check> rank <r>", "FAIL <check>
rank <r>: <why>" or "SKIP <check> rank <r>: <why>" per check.

``refusal``: where the engine's GPU path is NOT usable on at least one rank
(this machine: no driver), a CUDA request fails on every rank with the
engine's UnsupportedError naming the reason, and the next CPU call of the
same name works. The "CUDA tensors" are fake_cuda() views of host memory:
the engine refuses them in its preflight, before anything reads the memory.
With a usable GPU path on every rank this mode skips (the engine would hand
host pointers to NCCL).

``cuda``: real CUDA tensors, values checked against what every rank
contributed. Needs torch.cuda and the engine's GPU path on every rank; skips
otherwise. Each rank uses the GPU the engine picks (local rank modulo the
visible devices, or TANDEM_GPU_DEVICE).
"""

import argparse
import os
import sys

import torch

import horovod.torch as hvd
from horovod.common.exceptions import HorovodInternalError
from tandem import _collectives, _dtypes, errors

try:  # run as a script (tandem-run): workers/ is sys.path[0]
    from fake_cuda import FakeStream, fake_cuda
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.fake_cuda import FakeStream, fake_cuda
    from workers.report import run_checks

CHECKS = {"refusal": [], "cuda": []}


def check(mode):
    def register(fn):
        CHECKS[mode].append(fn)
        return fn
    return register


class Skip(Exception):
    pass


def expect_equal(got, want, what):
    got = got.cpu()
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError("%s: got %s %s %s, expected %s %s %s" % (
            what, got.dtype, tuple(got.shape), got.flatten()[:8].tolist(), want.dtype,
            tuple(want.shape), want.flatten()[:8].tolist()))


# ------------------------------------------------------------------- refusal

STATUS = {}


def unusable_ranks():
    """{rank: engine reason} for the ranks whose GPU path is not usable."""
    if "rows" not in STATUS:
        STATUS["rows"] = hvd.allgather_object(hvd.gpu_status())
    return {r: reason for r, (usable, reason) in enumerate(STATUS["rows"]) if not usable}


def expect_refused(fn, what):
    """fn() raises the engine's UNSUPPORTED error naming every unusable rank's reason."""
    unsupported = type(errors.make("TANDEM_ERR_UNSUPPORTED", ""))
    try:
        fn()
    except HorovodInternalError as exc:
        if not isinstance(exc, unsupported):
            raise AssertionError("%s: expected UnsupportedError, got %s: %s"
                                 % (what, type(exc).__name__, exc))
        message = str(exc)
        for rank, reason in unusable_ranks().items():
            if reason not in message:
                raise AssertionError("%s: the message does not carry rank %d's reason %r: %s"
                                     % (what, rank, reason, message))
        ranks = sorted(unusable_ranks())
        if len(set(unusable_ranks().values())) == 1:
            # One reason: the engine names the ranks that gave it.
            named = ("rank %d" % ranks[0]) if len(ranks) == 1 else \
                "ranks " + ",".join(str(r) for r in ranks)
            if named + ": " not in message:
                raise AssertionError("%s: the message does not name %s: %s"
                                     % (what, named, message))
        return
    raise AssertionError("%s: a CUDA request on a node without a usable GPU path did not "
                         "fail" % what)


def fake(tensor):
    return fake_cuda(tensor, 0)


def contribution(rank, n=6, dtype=torch.float32):
    return (torch.arange(n, dtype=torch.int64) % 5 + rank + 1).to(dtype)


def summed(n=6, dtype=torch.float32):
    return sum(contribution(r, n, torch.int64) for r in range(hvd.size())).to(dtype)


@check("refusal")
def raw_enqueue_with_device_0_is_refused_by_the_engine():
    # The runtime's own binding, no torch: device=0 on a host buffer.
    x = contribution(hvd.rank())
    buf = _collectives.Buffer(x.data_ptr(), _dtypes.FLOAT32, x.shape, device=0, stream=0)
    expect_refused(lambda: _collectives.allreduce("raw.gpu", buf, x.data_ptr(), _dtypes.SUM,
                                                  1.0, 1.0).wait(), "raw allreduce device=0")
    expect_equal(x, contribution(hvd.rank()), "input after the refusal")
    out = torch.empty_like(x)
    _collectives.allreduce("raw.gpu", _collectives.Buffer(x.data_ptr(), _dtypes.FLOAT32,
                                                          x.shape),
                           out.data_ptr(), _dtypes.SUM, 1.0, 1.0).wait()
    expect_equal(out, summed(), "the next CPU allreduce of the same name")
    got = {}

    def make_output(index, shape):
        got["out"] = torch.empty(shape, dtype=torch.float32)
        return got["out"].data_ptr(), got["out"].numel() * 4
    expect_refused(lambda: _collectives.allgather("raw.gpu.ag", buf, make_output).wait(),
                   "raw allgather device=0")
    assert "out" not in got, "a refused allgather produced an output"


@check("refusal")
def every_collective_on_a_cuda_tensor_is_refused_then_cpu_works():
    rank, size = hvd.rank(), hvd.size()
    mine = contribution(rank)
    cases = [
        ("allreduce", lambda t, n: hvd.allreduce(t, op=hvd.Sum, name=n), summed()),
        ("allreduce_", lambda t, n: hvd.allreduce_(t.clone(), op=hvd.Sum, name=n), summed()),
        ("grouped", lambda t, n: hvd.grouped_allreduce([t, t * 2], op=hvd.Sum, name=n)[1],
         summed() * 2),
        ("broadcast_", lambda t, n: hvd.broadcast_(t.clone(), root_rank=size - 1, name=n),
         contribution(size - 1)),
        ("allgather", lambda t, n: hvd.allgather(t.view(2, 3), name=n),
         torch.cat([contribution(r).view(2, 3) for r in range(size)])),
        ("alltoall", lambda t, n: hvd.alltoall(t.repeat(size), name=n),
         torch.cat([contribution(r) for r in range(size)])),
        ("reducescatter", lambda t, n: hvd.reducescatter(t.repeat(size).view(size, 6),
                                                         op=hvd.Sum, name=n),
         summed().view(1, 6)),
    ]
    for kind, call, want in cases:
        name = "refused." + kind
        expect_refused(lambda: call(fake(mine.clone()), name), kind)
        expect_equal(call(mine.clone(), name), want, kind + " on the CPU after the refusal")


def expect_adasum_refused(fn, what):
    """Adasum on a CUDA tensor: Tandem has no GPU Adasum, whether or not the
    GPU path is usable; the error says to copy the tensor to the host."""
    unsupported = type(errors.make("TANDEM_ERR_UNSUPPORTED", ""))
    try:
        fn()
    except unsupported as exc:
        assert "CPU tensors only" in str(exc), "%s: %s" % (what, exc)
        return
    raise AssertionError("%s: Adasum on a CUDA tensor was not refused" % what)


def adasum_refused_then_cpu_works(cuda_tensor):
    expect_adasum_refused(lambda: hvd.allreduce(cuda_tensor, op=hvd.Adasum), "allreduce")
    # The engine's own rule, for callers below the frontends: device 0 (a
    # host buffer here: refused before anything reads it).
    x = contribution(hvd.rank())
    buf = _collectives.Buffer(x.data_ptr(), _dtypes.FLOAT32, x.shape, device=0, stream=0)
    expect_adasum_refused(lambda: _collectives.allreduce("raw.adasum", buf, x.data_ptr(),
                                                         _dtypes.ADASUM, 1.0, 1.0).wait(),
                          "raw allreduce device=0")
    if hvd.size() & (hvd.size() - 1) == 0:
        same = torch.full((4,), 2.0)
        expect_equal(hvd.allreduce(same, op=hvd.Adasum, name="adasum.cpu"), same,
                     "Adasum on the CPU after the refusal")


@check("refusal")
def adasum_on_a_cuda_tensor_is_refused():
    adasum_refused_then_cpu_works(fake(contribution(hvd.rank())))


@check("refusal")
def distributed_optimizer_with_cuda_gradients_is_refused_then_cpu_works():
    w = torch.nn.Parameter(torch.zeros(4))
    # As Horovod's, the optimizer reduces nothing in a world of one unless
    # HOROVOD_ELASTIC=1: set it so that one rank exercises the path too.
    os.environ["HOROVOD_ELASTIC"] = "1"
    try:
        opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0),
                                       named_parameters=[("w", w)])
    finally:
        del os.environ["HOROVOD_ELASTIC"]
    w.grad = fake(torch.full((4,), float(hvd.rank())))
    expect_refused(opt.step, "DistributedOptimizer.step on CUDA gradients")
    expect_equal(w.detach(), torch.zeros(4), "parameters after a refused step")
    w.grad = torch.full((4,), float(hvd.rank()))
    opt.step()
    mean = sum(range(hvd.size())) / hvd.size()
    expect_equal(w.detach(), torch.full((4,), -mean), "the next step on CPU gradients")


# ------------------------------------------------------------------ real CUDA

def device():
    return torch.device("cuda", torch.cuda.current_device())


def on_gpu(t):
    return t.to(device())


@check("cuda")
def allreduce_on_cuda():
    rank = hvd.rank()
    for dtype in (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64):
        x = on_gpu(contribution(rank, 1000, dtype))
        out = hvd.allreduce(x, op=hvd.Sum, name="cuda.ar.%s" % dtype)
        assert out.device == x.device, out.device
        expect_equal(out, summed(1000, dtype), "allreduce Sum %s" % dtype)
        hvd.allreduce_(x, op=hvd.Max, name="cuda.ar_.%s" % dtype)
        expect_equal(x, contribution(hvd.size() - 1, 1000, dtype), "allreduce_ Max %s" % dtype)
    avg = hvd.allreduce(on_gpu(contribution(rank, 10, torch.float64)), op=hvd.Average)
    expect_equal(avg, summed(10, torch.float64) / hvd.size(), "Average")
    scaled = hvd.allreduce(on_gpu(contribution(rank, 10, torch.float64)), op=hvd.Sum,
                           prescale_factor=0.5, postscale_factor=4.0)
    expect_equal(scaled, summed(10, torch.float64) * 2.0, "prescale/postscale")
    view = on_gpu(contribution(rank, 12)).view(3, 4).t()
    hvd.allreduce_(view, op=hvd.Sum)
    expect_equal(view, summed(12).view(3, 4).t(), "non-contiguous in place")
    outs = hvd.grouped_allreduce([on_gpu(contribution(rank, n)) for n in (3, 5, 7)], op=hvd.Sum)
    for n, out in zip((3, 5, 7), outs):
        expect_equal(out, summed(n), "grouped %d" % n)
    # On a side stream: the engine orders on the current stream.
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = on_gpu(contribution(rank, 1 << 20))
        y.mul_(2)
        got = hvd.allreduce(y, op=hvd.Sum, name="cuda.side_stream")
        got.add_(1)
    torch.cuda.synchronize()
    expect_equal(got, summed(1 << 20) * 2 + 1, "allreduce on a side stream")


@check("cuda")
def adasum_on_cuda_is_refused():
    adasum_refused_then_cpu_works(on_gpu(contribution(hvd.rank())))


@check("cuda")
def broadcast_allgather_alltoall_reducescatter_on_cuda():
    rank, size = hvd.rank(), hvd.size()
    for root in (0, size - 1):
        t = on_gpu(contribution(rank, 9))
        hvd.broadcast_(t, root_rank=root, name="cuda.bc.%d" % root)
        expect_equal(t, contribution(root, 9), "broadcast_ root %d" % root)
        out = hvd.broadcast(on_gpu(contribution(rank, 9)), root_rank=root)
        expect_equal(out, contribution(root, 9), "broadcast root %d" % root)
    mine = on_gpu(contribution(rank, 3 * (rank + 1)).view(rank + 1, 3))  # uneven rows
    gathered = hvd.allgather(mine, name="cuda.ag")
    assert gathered.device == mine.device
    expect_equal(gathered, torch.cat([contribution(r, 3 * (r + 1)).view(r + 1, 3)
                                      for r in range(size)]), "uneven allgather")
    splits = [r + 1 for r in range(size)]
    send = on_gpu(torch.full((sum(splits),), float(rank)))
    out, received = hvd.alltoall(send, splits=splits, name="cuda.a2a")
    assert out.device == send.device
    expect_equal(out, torch.cat([torch.full((rank + 1,), float(r)) for r in range(size)]),
                 "alltoall with splits")
    assert received.tolist() == [rank + 1] * size, received
    rows = 2 * size + 1  # uneven: the first rank gets one more row
    rs = hvd.reducescatter(on_gpu(contribution(rank, rows * 2).view(rows, 2)), op=hvd.Sum,
                           name="cuda.rs")
    full = summed(rows * 2).view(rows, 2)
    first = sum(rows // size + (1 if r < rows % size else 0) for r in range(rank))
    mine_rows = rows // size + (1 if rank < rows % size else 0)
    expect_equal(rs, full[first:first + mine_rows], "uneven reducescatter")


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _batch(rank):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(4, 8, generator=g), torch.randn(4, 2, generator=g)


@check("cuda")
def distributed_optimizer_on_a_cuda_model_equals_the_global_batch():
    rank, size = hvd.rank(), hvd.size()
    model = _model(seed=rank).to(device())  # different on purpose: broadcast fixes it
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    reference = _model(seed=0).double()
    for name, p in model.state_dict().items():
        expect_equal(p, reference.state_dict()[name].float(), "broadcast_parameters " + name)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _step in range(3):
        x, y = _batch(rank)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x.to(device())), y.to(device())).backward()
        opt.step()
        # One process, float64, the same global batch: mean of the per-rank losses.
        ref_opt.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(reference(_batch(r)[0].double()),
                                                _batch(r)[1].double()) for r in range(size))
        (loss / size).backward()
        ref_opt.step()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        worst = (p.detach().cpu().double() - q.detach()).abs().max().item()
        # float32 on the GPU vs float64 here, 3 steps of a tiny model.
        if worst > 1e-4:
            raise AssertionError("%s differs from the global-batch reference by %g"
                                 % (name, worst))
    params = hvd.allgather_object([p.detach().cpu() for p in model.parameters()])
    for other in params:
        for a, b in zip(other, params[0]):
            expect_equal(a, b, "parameters equal on every rank")


@check("cuda")
def sync_batch_norm_on_cuda_matches_batch_norm_on_the_whole_batch():
    rank, size = hvd.rank(), hvd.size()
    inputs = [torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(r))
              for r in range(size)]
    bn = hvd.SyncBatchNorm(4).to(device())
    x = inputs[rank].to(device()).requires_grad_()
    out = bn(x)
    out.sum().backward()
    ref_bn = torch.nn.BatchNorm1d(4).double()
    whole = torch.cat(inputs).double().requires_grad_()
    ref = ref_bn(whole)
    ref.sum().backward()
    mine = slice(3 * rank, 3 * rank + 3)
    for what, a, b in (("output", out, ref[mine]), ("input gradient", x.grad,
                                                     whole.grad[mine]),
                       ("running_mean", bn.running_mean, ref_bn.running_mean),
                       ("running_var", bn.running_var, ref_bn.running_var)):
        worst = (a.detach().cpu().double() - b.detach()).abs().max().item()
        if worst > 1e-4:
            raise AssertionError("SyncBatchNorm %s differs by %g" % (what, worst))


# --------------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=sorted(CHECKS))
    args = parser.parse_args()
    hvd.init()
    skip = None
    if args.mode == "refusal":
        if not unusable_ranks():
            skip = "the GPU path is usable on every rank: nothing refuses a CUDA tensor"
        elif not torch.cuda.is_available():
            # torch has no CUDA here: the binding still asks it for the
            # current stream of a (fake) CUDA tensor; answer the legacy
            # default stream, a valid value for the engine.
            torch.cuda.current_stream = lambda device=None: FakeStream(0, device)
    else:
        rows = hvd.allgather_object((torch.cuda.is_available(), hvd.gpu_status()))
        missing = ["rank %d: %s" % (r, "torch has no CUDA" if not t else s[1])
                   for r, (t, s) in enumerate(rows) if not (t and s[0])]
        if missing:
            skip = "no usable GPU path on every rank (%s)" % "; ".join(missing)
        else:
            torch.cuda.set_device(int(os.environ.get("TANDEM_GPU_DEVICE",
                                                     hvd.local_rank() % torch.cuda.device_count())))
    return run_checks(CHECKS[args.mode], skip)


if __name__ == "__main__":
    sys.exit(main())

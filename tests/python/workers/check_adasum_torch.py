"""hvd.Adasum through horovod.torch beyond Horovod's own Adasum tests:
grouped allreduce, prescale/postscale, the optimizer's delta semantics and
the rules Horovod states (power-of-two worlds, global set, no reducescatter),
each value against a reference computed here in float64 from what every
rank contributed (every rank can compute every other rank's input).
Prints PASS/FAIL per check (report.py)."""

import sys

import numpy as np
import torch

import horovod.torch as hvd

from report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def combine(a, b):
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1 - dot / (2 * aa) if aa >= np.sqrt(np.finfo(np.float64).tiny) else 1.0
    cb = 1 - dot / (2 * bb) if bb >= np.sqrt(np.finfo(np.float64).tiny) else 1.0
    return ca * a + cb * b


def reference(vectors):
    while len(vectors) > 1:
        vectors = [combine(vectors[i], vectors[i + 1]) for i in range(0, len(vectors), 2)]
    return vectors[0]


def contribution(rank, n, seed):
    g = np.random.default_rng(seed)
    shared = g.standard_normal(n)
    return shared + 0.5 * np.random.default_rng(seed * 100 + rank).standard_normal(n)


def close(got, want, tol, what):
    got = np.asarray(got, dtype=np.float64)
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)
    assert err <= tol, "%s: relative error %.3g > %.3g" % (what, err, tol)


@check
def grouped_allreduce_each_tensor_alone():
    size, rank = hvd.size(), hvd.rank()
    sizes = [1, 5, 300]
    tensors = [torch.from_numpy(contribution(rank, n, 3 + k)) for k, n in enumerate(sizes)]
    out = hvd.grouped_allreduce(tensors, op=hvd.Adasum, name="adasum.grouped")
    for k, n in enumerate(sizes):
        want = reference([contribution(r, n, 3 + k) for r in range(size)])
        close(out[k].numpy(), want, 1e-12, "grouped tensor %d" % k)


@check
def async_with_scales_float32():
    size, rank = hvd.size(), hvd.rank()
    x = torch.from_numpy(contribution(rank, 64, 11).astype(np.float32))
    h = hvd.allreduce_async(x, op=hvd.Adasum, prescale_factor=2.0, postscale_factor=0.25,
                            name="adasum.scaled")
    got = hvd.synchronize(h)
    inputs = [2.0 * contribution(r, 64, 11).astype(np.float32).astype(np.float64)
              for r in range(size)]
    close(got.numpy(), 0.25 * reference(inputs), 1e-6, "scaled float32")


@check
def optimizer_combines_the_local_steps():
    # Each rank's SGD step on its own data is -lr * grad; the parameters end
    # as start + Adasum(steps), the same on every rank.
    size, rank = hvd.size(), hvd.rank()
    torch.manual_seed(5)
    model = torch.nn.Linear(4, 1, bias=False).double()
    start = model.weight.detach().numpy().ravel().copy()
    lr = 0.1
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)

    def data(r):
        g = np.random.default_rng(40 + r)
        return g.standard_normal((8, 4)), g.standard_normal((8, 1))

    x, y = (torch.from_numpy(a) for a in data(rank))
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    steps = []
    for r in range(size):
        xr, yr = data(r)
        pred = xr @ start.reshape(4, 1)
        grad = (2.0 / xr.shape[0]) * xr.T @ (pred - yr)
        steps.append(-lr * grad.ravel())
    close(model.weight.detach().numpy().ravel(), start + reference(steps), 1e-12,
          "parameters after one Adasum step")
    if size > 1:  # a world of one gets the plain optimizer, as in Horovod
        try:
            with opt.skip_synchronize():
                pass
            raise AssertionError("skip_synchronize was allowed")
        except AssertionError as exc:
            assert "not supported when using Adasum" in str(exc), exc


@check
def rules_horovod_states():
    size = hvd.size()
    try:
        hvd.reducescatter(torch.ones(size * 2), op=hvd.Adasum)
        raise AssertionError("reducescatter with Adasum was allowed")
    except RuntimeError as exc:
        assert "Adasum" in str(exc), exc
    if size > 1:
        ps = hvd.add_process_set([0, 1]) if size > 2 else None
        if ps is not None:
            try:
                hvd.allreduce(torch.ones(2), op=hvd.Adasum, process_set=ps)
                raise AssertionError("Adasum on a process set was allowed")
            except NotImplementedError as exc:
                assert "non-global process sets" in str(exc), exc
            hvd.remove_process_set(ps)


if __name__ == "__main__":
    hvd.init()
    sys.exit(run_checks(CHECKS))

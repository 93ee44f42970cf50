"""Every collective x dtype x shape through one frontend, checked against a
numpy reference computed from what every rank sent.

    tandem-run -np N python sweep_dtypes.py FRONTEND

FRONTEND is ``numpy`` (tandem._arrays, the framework-neutral core), ``torch``
(horovod.torch), ``tensorflow`` (horovod.tensorflow, eagerly and in
tf.function) or ``keras`` (horovod.tensorflow.keras's value collectives).
Each rank prints one PASS/FAIL line per check (workers/report.py); a FAIL
lists every (dtype, shape) that went wrong, not only the first.

Contributions are functions of (rank, element index), small enough that
every Sum, Product and Average is exact in every type (float16 and bfloat16
included), and signed ones are negative too, so that an integer Average
that floor-divides instead of truncating (Horovod's rule) is caught.
Shapes include 0-d, length 1, odd lengths and 3-D; alltoall is swept 1-D
as well as N-D (a 1-D array whose type travels as bytes is where the wire
form once counted bytes as rows). Frontends with in-place reductions
(horovod.torch's allreduce_ and grouped_allreduce_) sweep those too.
"""

import itertools
import sys

import numpy as np

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks

SUM, AVERAGE, MIN, MAX, PRODUCT = "Sum", "Average", "Min", "Max", "Product"
REDUCTIONS = [SUM, AVERAGE, MIN, MAX, PRODUCT]
SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 2)]


def _bfloat16():
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


# ----------------------------------------------------------------- reference

def kind(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "bool"
    if dtype.kind == "c":
        return "complex"
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return "float"
    return "signed" if dtype.kind == "i" else "unsigned"


def contribution(rank, shape, dtype, op=None):
    """What ``rank`` sends for an array of ``shape`` and numpy ``dtype``."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    idx = np.arange(n, dtype=np.int64).reshape(shape)
    k = kind(dtype)
    if k == "bool":
        return ((idx + rank) % 3 != 0).astype(np.bool_)
    if op == PRODUCT:  # |values| <= 2: a product of 3 fits int8
        base = (idx + rank) % 3
        values = base - 1 if k in ("signed", "float", "complex") else base
        values = np.where(values == 0, 2, values)
    else:
        values = (idx * 7 + rank * 3) % 11
        if k != "unsigned":
            values = values - 5
    if k == "complex":
        imag = (idx * 3 + rank * 5) % 7 - 3 if op != PRODUCT else np.ones_like(idx)
        return (values + 1j * imag).astype(dtype)
    if k == "float":
        return (values.astype(np.float64) / 2).astype(dtype)
    return values.astype(dtype)


def reduce_reference(arrays, op, dtype):
    dtype = np.dtype(dtype)
    k = kind(dtype)
    if k == "bool":
        stack = np.stack(arrays)
        # Sum and Max are "or", Min and Product "and"
        return (stack.any(0) if op in (SUM, MAX) else stack.all(0)).astype(np.bool_)
    wide = {"complex": np.complex128, "float": np.float64}.get(k, np.int64)
    stack = np.stack([a.astype(wide) for a in arrays])
    if op == SUM:
        out = stack.sum(0)
    elif op == AVERAGE:
        total = stack.sum(0)
        if k in ("float", "complex"):
            out = total / len(arrays)
        else:  # truncated toward zero, as Horovod scales integers
            out = np.fix(total.astype(np.float64) / len(arrays)).astype(np.int64)
    elif op == MIN:
        out = stack.min(0)
    elif op == MAX:
        out = stack.max(0)
    else:
        out = stack.prod(0)
    return np.asarray(out).astype(dtype)


def scaled_reference(arrays, op, dtype, pre, post):
    """Sum or Average with scale factors: floating types scaled exactly
    (within the tolerance of one rounding), integer types as Horovod's
    ScaleBuffer does, in float64 truncated toward zero: each rank's input by
    ``pre``, the sum by ``post`` (``post / size`` for Average)."""
    dtype = np.dtype(dtype)
    k = kind(dtype)
    factor = post / len(arrays) if op == AVERAGE else post
    if k in ("float", "complex"):
        wide = np.complex128 if k == "complex" else np.float64
        total = sum(a.astype(wide) * pre for a in arrays)
        return np.asarray(total * factor).astype(dtype)
    total = sum(np.trunc(a.astype(np.float64) * pre).astype(np.int64) for a in arrays)
    return np.trunc(np.asarray(total, dtype=np.float64) * factor).astype(np.int64).astype(dtype)


def same(got, want, exact=True):
    got = np.asarray(got)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if exact:
        if want.dtype.name == "bfloat16":  # exact in float64; array_equal lacks the type
            got, want = got.astype(np.float64), want.astype(np.float64)
        ok = np.array_equal(got, want)
    else:  # an Average that is not a multiple of the set size: one rounding
        tol = 1e-2 if want.dtype.itemsize <= 2 or want.dtype.name == "bfloat16" else 1e-6
        ok = np.allclose(got.astype(np.complex128), want.astype(np.complex128), rtol=tol,
                         atol=tol)
    if ok:
        return None
    return "got %s, expected %s" % (got.reshape(-1)[:8].tolist(), want.reshape(-1)[:8].tolist())


# ----------------------------------------------------------------- frontends

class Frontend:
    """The collectives of one frontend on numpy arrays in and out. ``modes``
    are the execution modes swept (tf.function beside eager for TF)."""
    modes = ["eager"]
    reducible = []   # dtypes every reduction takes
    movable = []     # dtypes the byte-moving collectives take
    refused_reduction = []  # dtypes a reduction must refuse with an error
    complex_ops = [SUM, AVERAGE]

    def rank(self):
        raise NotImplementedError

    def size(self):
        raise NotImplementedError


class NumpyFrontend(Frontend):
    def __init__(self):
        import tandem
        from tandem import _arrays, _ops
        tandem.init()
        self.t, self.a, self.ops = tandem, _arrays, _ops
        base = [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.float16, np.float32, np.float64, np.bool_, np.complex64, np.complex128]
        bf = _bfloat16()
        self.reducible = [np.dtype(d) for d in base] + ([bf] if bf is not None else [])
        self.movable = self.reducible + [np.dtype(np.uint64), np.dtype(np.int16)]
        self.refused_reduction = [np.dtype(np.uint64)]
        self.names = itertools.count()

    def rank(self):
        return self.t.rank()

    def size(self):
        return self.t.size()

    def _name(self):
        return "sweep.%d" % next(self.names)

    def _op(self, op):
        return getattr(self.ops, op)

    def allreduce(self, x, op, mode, pre=1.0, post=1.0):
        return self.a.start_allreduce(self._name(), x, self._op(op), pre, post).wait()

    def grouped_allreduce(self, xs, op, mode):
        names = [self._name() for _ in xs]
        return self.a.start_grouped_allreduce(names, xs, self._op(op)).wait()

    def broadcast(self, x, root, mode):
        return self.a.start_broadcast(self._name(), x, root).wait()

    def allgather(self, x, mode):
        return self.a.start_allgather(self._name(), x).wait()

    def alltoall(self, x, splits, mode):
        out, received = self.a.start_alltoall(self._name(), x, splits).wait()
        return out, received

    def reducescatter(self, x, op, mode, pre=1.0, post=1.0):
        return self.a.start_reducescatter(self._name(), x, self._op(op), pre, post).wait()


class TorchFrontend(Frontend):
    def __init__(self):
        import torch
        import horovod.torch as hvd
        hvd.init()
        self.torch, self.hvd = torch, hvd
        base = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
                np.float64, np.bool_, np.complex64, np.complex128]
        self.reducible = [np.dtype(d) for d in base]
        self.bf16 = _bfloat16()  # torch.bfloat16 travels to numpy as int16 bits
        if self.bf16 is not None:
            self.reducible.append(self.bf16)
        self.movable = list(self.reducible)
        if hasattr(torch, "uint16"):  # torch >= 2.3: widened as in every frontend
            self.reducible += [np.dtype(np.uint16), np.dtype(np.uint32)]
            self.movable += [np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64)]
            self.refused_reduction = [np.dtype(np.uint64)]

    def rank(self):
        return self.hvd.rank()

    def size(self):
        return self.hvd.size()

    def _t(self, x):
        x = np.array(x, copy=True)
        if self.bf16 is not None and x.dtype == self.bf16:
            return self.torch.from_numpy(x.view(np.int16)).view(self.torch.bfloat16)
        return self.torch.from_numpy(x)

    def _n(self, t):
        t = t.detach().cpu()
        if t.dtype == self.torch.bfloat16:
            return t.view(self.torch.int16).numpy().view(self.bf16)
        return t.numpy()

    def allreduce(self, x, op, mode, pre=1.0, post=1.0):
        return self._n(self.hvd.allreduce(self._t(x), op=getattr(self.hvd, op),
                                          prescale_factor=pre, postscale_factor=post))

    def allreduce_in_place(self, x, op, mode):
        t = self._t(x)
        self.hvd.allreduce_(t, op=getattr(self.hvd, op))
        return self._n(t)

    def grouped_allreduce(self, xs, op, mode):
        out = self.hvd.grouped_allreduce([self._t(x) for x in xs], op=getattr(self.hvd, op))
        return [self._n(t) for t in out]

    def grouped_allreduce_in_place(self, xs, op, mode):
        ts = [self._t(x) for x in xs]
        self.hvd.grouped_allreduce_(ts, op=getattr(self.hvd, op))
        return [self._n(t) for t in ts]

    def broadcast(self, x, root, mode):
        return self._n(self.hvd.broadcast(self._t(x), root))

    def allgather(self, x, mode):
        return self._n(self.hvd.allgather(self._t(x)))

    def alltoall(self, x, splits, mode):
        if splits is None:
            return self._n(self.hvd.alltoall(self._t(x))), None
        out, received = self.hvd.alltoall(
            self._t(x), splits=self.torch.tensor(splits, dtype=self.torch.int32))
        return self._n(out), self._n(received)

    def reducescatter(self, x, op, mode, pre=1.0, post=1.0):
        return self._n(self.hvd.reducescatter(self._t(x), op=getattr(self.hvd, op),
                                              prescale_factor=pre, postscale_factor=post))


class TensorFlowFrontend(Frontend):
    modes = ["eager", "graph"]

    def __init__(self):
        import tensorflow as tf
        import horovod.tensorflow as hvd
        hvd.init()
        self.tf, self.hvd = tf, hvd
        base = [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.float16, np.float32, np.float64, np.bool_, np.complex64, np.complex128]
        bf = tf.bfloat16.as_numpy_dtype
        self.reducible = [np.dtype(d) for d in base] + [np.dtype(bf)]
        self.movable = self.reducible + [np.dtype(np.uint64)]
        self.refused_reduction = [np.dtype(np.uint64)]

    def rank(self):
        return self.hvd.rank()

    def size(self):
        return self.hvd.size()

    def _run(self, mode, fn, *args):
        tf = self.tf
        tensors = tf.nest.map_structure(lambda a: tf.constant(a) if a is not None else None,
                                        args)
        if mode == "graph":
            fn = tf.function(fn, autograph=False)
        out = fn(*tensors)
        return tf.nest.map_structure(lambda t: t.numpy(), out)

    def allreduce(self, x, op, mode, pre=1.0, post=1.0):
        return self._run(mode, lambda t: self.hvd.allreduce(
            t, op=getattr(self.hvd, op), prescale_factor=pre, postscale_factor=post), x)

    def grouped_allreduce(self, xs, op, mode):
        return self._run(mode, lambda ts: self.hvd.grouped_allreduce(
            ts, op=getattr(self.hvd, op)), list(xs))

    def broadcast(self, x, root, mode):
        return self._run(mode, lambda t: self.hvd.broadcast(t, root), x)

    def allgather(self, x, mode):
        return self._run(mode, self.hvd.allgather, x)

    def alltoall(self, x, splits, mode):
        if splits is None:
            return self._run(mode, self.hvd.alltoall, x), None
        return tuple(self._run(mode, lambda t, s: self.hvd.alltoall(t, splits=s), x,
                               np.asarray(splits, dtype=np.int32)))

    def reducescatter(self, x, op, mode, pre=1.0, post=1.0):
        return self._run(mode, lambda t: self.hvd.reducescatter(
            t, op=getattr(self.hvd, op), prescale_factor=pre, postscale_factor=post), x)


class KerasFrontend(Frontend):
    """horovod.tensorflow.keras's allreduce/allgather/broadcast/reducescatter
    on host values; no alltoall or grouped call in that API."""

    def __init__(self):
        import horovod.tensorflow.keras as hvd
        hvd.init()
        self.hvd = hvd
        base = [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.float16, np.float32, np.float64, np.bool_, np.complex64, np.complex128]
        self.reducible = [np.dtype(d) for d in base]
        self.movable = self.reducible + [np.dtype(np.uint64)]
        self.refused_reduction = [np.dtype(np.uint64)]

    def rank(self):
        return self.hvd.rank()

    def size(self):
        return self.hvd.size()

    def _n(self, value):
        if hasattr(value, "numpy"):  # an eager tensor (Keras 2, Keras 3 on TensorFlow)
            return np.asarray(value.numpy())
        import keras
        return np.asarray(keras.ops.convert_to_numpy(value))

    def _op(self, op):
        # Horovod's keras module exports Average and Sum only; its allreduce
        # takes horovod.tensorflow's other ops.
        import horovod.tensorflow as hvd_tf
        return getattr(self.hvd, op, None) or getattr(hvd_tf, op)

    def allreduce(self, x, op, mode, pre=1.0, post=1.0):
        return self._n(self.hvd.allreduce(x, op=self._op(op), prescale_factor=pre,
                                          postscale_factor=post))

    def broadcast(self, x, root, mode):
        return self._n(self.hvd.broadcast(x, root))

    def allgather(self, x, mode):
        return self._n(self.hvd.allgather(x))

    def reducescatter(self, x, op, mode, pre=1.0, post=1.0):
        if (pre, post) != (1.0, 1.0):  # Horovod's keras reducescatter takes no factors
            raise NotImplementedError
        return self._n(self.hvd.reducescatter(x, op=self._op(op)))


FRONTENDS = {"numpy": NumpyFrontend, "torch": TorchFrontend,
             "tensorflow": TensorFlowFrontend, "keras": KerasFrontend}
F = None  # the frontend of this run


# ------------------------------------------------------------------- checks

class Failures:
    def __init__(self):
        self.items = []

    def add(self, what, problem):
        if problem is not None:
            self.items.append("%s: %s" % (what, problem))

    def raise_any(self):
        if self.items:
            raise AssertionError("%d cases wrong: %s" % (len(self.items),
                                                        "; ".join(self.items[:6])))


def _attempt(failures, what, fn):
    """fn() -> problem or None; an exception is a problem too."""
    try:
        failures.add(what, fn())
    except Exception as exc:  # noqa: BLE001 - every case is reported
        failures.add(what, "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:200]))


def _refused(fn):
    try:
        fn()
    except Exception:  # noqa: BLE001 - any clear error; its type is checked elsewhere
        return None
    return "accepted; an error was expected"


def _variants(name):
    """The frontend's out-of-place call and, where it has one, in place."""
    out = [("", getattr(F, name))]
    if hasattr(F, name + "_in_place"):
        out.append((" in place", getattr(F, name + "_in_place")))
    return out


def _reduction_check(op):
    def run():
        failures, size = Failures(), F.size()
        for (how, call), dtype, shape, mode in itertools.product(
                _variants("allreduce"), F.reducible, SHAPES, F.modes):
            what = "%s %s %s%s" % (dtype, list(shape), mode, how)
            k = kind(dtype)
            if k == "bool" and op == AVERAGE:
                _attempt(failures, what, lambda: _refused(lambda: call(
                    contribution(F.rank(), shape, dtype, op), op, mode)))
                continue
            if k == "complex" and op not in F.complex_ops:
                _attempt(failures, what, lambda: _refused(lambda: call(
                    contribution(F.rank(), shape, dtype, op), op, mode)))
                continue
            sent = [contribution(r, shape, dtype, op) for r in range(size)]
            want = reduce_reference(sent, op, dtype)
            exact = not (op == AVERAGE and k in ("float", "complex") and size == 3)
            _attempt(failures, what, lambda: same(call(sent[F.rank()], op, mode),
                                                  want, exact))
        for dtype in F.refused_reduction:
            _attempt(failures, "%s refused" % dtype, lambda: _refused(lambda: F.allreduce(
                contribution(F.rank(), (3,), dtype), op, "eager")))
        failures.raise_any()
    run.__name__ = "allreduce_" + op.lower()
    return run


def grouped_allreduce():
    """Several types in one group (Sum): each fused or not by type, each right."""
    if not hasattr(F, "grouped_allreduce"):
        return
    failures, size = Failures(), F.size()
    for (how, call), mode in itertools.product(_variants("grouped_allreduce"), F.modes):
        group = [d for d in F.reducible if kind(d) != "bool"]
        shapes = [SHAPES[i % len(SHAPES)] for i in range(len(group))]
        sent = [[contribution(r, s, d) for d, s in zip(group, shapes)] for r in range(size)]
        wants = [reduce_reference([sent[r][i] for r in range(size)], SUM, d)
                 for i, d in enumerate(group)]
        try:
            got = call(sent[F.rank()], SUM, mode)
        except Exception as exc:  # noqa: BLE001
            failures.add(mode + how, "%s: %s" % (type(exc).__name__, exc))
            continue
        for d, s, g, w in zip(group, shapes, got, wants):
            failures.add("%s %s %s%s" % (d, list(s), mode, how), same(g, w))
    failures.raise_any()


def broadcast():
    failures, size = Failures(), F.size()
    for dtype, shape, mode, root in itertools.product(F.movable, SHAPES, F.modes,
                                                      sorted({0, size - 1})):
        want = contribution(root, shape, dtype)
        _attempt(failures, "%s %s %s root %d" % (dtype, list(shape), mode, root),
                 lambda: same(F.broadcast(contribution(F.rank(), shape, dtype), root, mode),
                              want))
    failures.raise_any()


def allgather():
    """Rank r sends r+1 rows (uneven first dimensions)."""
    failures, size = Failures(), F.size()
    for dtype, shape, mode in itertools.product(F.movable, SHAPES[1:], F.modes):
        rest = shape[1:]
        sent = [contribution(r, (r + 1,) + rest, dtype) for r in range(size)]
        want = np.concatenate(sent)
        _attempt(failures, "%s %s %s" % (dtype, ["r+1"] + list(rest), mode),
                 lambda: same(F.allgather(sent[F.rank()], mode), want))
    failures.raise_any()


def alltoall():
    """Without splits (first dimension a multiple of the size, 1-D and N-D)
    and with uneven splits, received splits checked; without splits and a
    first dimension that does not divide: refused."""
    if not hasattr(F, "alltoall"):
        return
    failures, size, rank = Failures(), F.size(), F.rank()
    for dtype, rest, mode in itertools.product(F.movable, [(), (3,), (2, 2)], F.modes):
        label = "%s rest %s %s" % (dtype, list(rest), mode)
        # even: every rank sends 2 rows to each rank
        sent = [contribution(s, (2 * size,) + rest, dtype) for s in range(size)]
        want = np.concatenate([sent[s][2 * rank:2 * rank + 2] for s in range(size)])
        _attempt(failures, label + " even",
                 lambda: same(F.alltoall(sent[rank], None, mode)[0], want))
        # uneven splits
        splits = [[(s + d) % 3 for d in range(size)] for s in range(size)]
        sent = [contribution(s, (sum(splits[s]),) + rest, dtype) for s in range(size)]
        parts = []
        for s in range(size):
            start = sum(splits[s][:rank])
            parts.append(sent[s][start:start + splits[s][rank]])
        want = np.concatenate(parts)
        want_received = np.asarray([splits[s][rank] for s in range(size)], dtype=np.int32)

        def uneven():
            out, received = F.alltoall(sent[rank], splits[rank], mode)
            return same(out, want) or same(np.asarray(received).astype(np.int32),
                                           want_received)
        _attempt(failures, label + " splits", uneven)
        if size > 1:
            _attempt(failures, label + " indivisible", lambda: _refused(
                lambda: F.alltoall(contribution(rank, (2 * size + 1,) + rest, dtype), None,
                                   mode)))
    failures.raise_any()


def _reducescatter_check(op):
    def run():
        if not hasattr(F, "reducescatter"):
            return
        failures, size, rank = Failures(), F.size(), F.rank()
        for dtype, shape, mode in itertools.product(F.reducible, [(7,), (5, 3), (4, 2, 2)],
                                                    F.modes):
            if kind(dtype) == "bool" or (kind(dtype) == "complex" and op not in F.complex_ops):
                continue
            sent = [contribution(r, shape, dtype, op) for r in range(size)]
            full = reduce_reference(sent, op, dtype)
            rows = shape[0]
            counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
            start = sum(counts[:rank])
            want = full[start:start + counts[rank]]
            exact = not (op == AVERAGE and kind(dtype) in ("float", "complex") and size == 3)
            _attempt(failures, "%s %s %s" % (dtype, list(shape), mode),
                     lambda: same(F.reducescatter(sent[rank], op, mode), want, exact))
        failures.raise_any()
    run.__name__ = "reducescatter_" + op.lower()
    return run


SCALES = {SUM: (1.5, 0.5), AVERAGE: (1.5, 2.0)}


def _scaled_check(collective):
    """prescale_factor and postscale_factor with Sum and Average, every type
    that takes them (integers as Horovod scales them)."""
    def run():
        if not hasattr(F, collective):
            return
        failures, size, rank = Failures(), F.size(), F.rank()
        shapes = SHAPES if collective == "allreduce" else [(7,), (5, 3)]
        for dtype, shape, mode, op in itertools.product(F.reducible, shapes, F.modes,
                                                        [SUM, AVERAGE]):
            if kind(dtype) == "bool":
                continue
            pre, post = SCALES[op]
            sent = [contribution(r, shape, dtype) for r in range(size)]
            want = scaled_reference(sent, op, dtype, pre, post)
            if collective == "reducescatter":
                counts = [shape[0] // size + (1 if r < shape[0] % size else 0)
                          for r in range(size)]
                start = sum(counts[:rank])
                want = want[start:start + counts[rank]]
            exact = kind(dtype) not in ("float", "complex") or (op == SUM or size == 1)
            call = getattr(F, collective)
            try:
                got = call(sent[rank], op, mode, pre, post)
            except NotImplementedError:
                return  # this frontend's call takes no factors (Horovod's keras reducescatter)
            except Exception as exc:  # noqa: BLE001 - every case is reported
                failures.add("%s %s %s %s" % (dtype, list(shape), mode, op),
                             "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:200]))
                continue
            failures.add("%s %s %s %s" % (dtype, list(shape), mode, op), same(got, want, exact))
        failures.raise_any()
    run.__name__ = collective + "_scaled"
    return run


CHECKS = [_reduction_check(op) for op in REDUCTIONS] + [_scaled_check("allreduce"),
                                                         _scaled_check("reducescatter")] + [
    grouped_allreduce, broadcast, allgather, alltoall,
    _reducescatter_check(SUM), _reducescatter_check(AVERAGE)]


def main(argv):
    global F
    frontend = argv[1] if len(argv) > 1 else "numpy"
    F = FRONTENDS[frontend]()
    return run_checks(CHECKS)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

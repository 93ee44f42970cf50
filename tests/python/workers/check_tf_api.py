"""Every horovod.tensorflow call, run on every rank, eagerly and inside
tf.function, with values checked against what the ranks contributed. Run as
N ranks (tandem-run -np N, or srun --horovod=on); each rank prints
"PASS <check>" or "FAIL <check>: <why>" per check and exits 1 if any failed.
``--only a,b`` runs a subset.

Written against ``horovod.tensorflow`` on purpose: it is also the proof that
the shim exposes the API under Horovod's names.

Contributions are functions of the rank, so every rank can compute what every
other rank sent and hence the exact expected result. Values are small
integers so that float16/bfloat16 sums are exact and Product does not
overflow.
"""

import argparse
import os
import sys
import warnings

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from horovod.common.exceptions import HorovodInternalError

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


REDUCIBLE = [tf.uint8, tf.int8, tf.int16, tf.uint16, tf.int32, tf.uint32, tf.int64,
             tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.bool]
COMPLEX = [tf.complex64, tf.complex128]
ALL = REDUCIBLE + COMPLEX
MODES = ["eager", "graph"]


def in_mode(mode, fn, *args):
    """fn(*args) eagerly, or traced and run as a tf.function."""
    if mode == "eager":
        return fn(*args)
    return tf.function(fn, autograph=False)(*args)


def contribution(rank, shape, dtype, op=None):
    """What ``rank`` sends: small, rank-dependent, element-dependent values."""
    n = int(np.prod(shape, dtype=np.int64))
    idx = np.arange(n, dtype=np.int64).reshape(shape)
    if dtype == tf.bool:
        return tf.constant((idx + rank) % 2 == 0)
    if op == hvd.Product:
        values = (idx + rank) % 2 + 1  # 1 or 2: products stay small
    else:
        values = idx % 5 + rank + 1
    if dtype.is_complex:
        real = tf.constant(values.astype(np.float64))
        return tf.cast(tf.complex(real, -real), dtype)
    return tf.cast(tf.constant(values), dtype)


def as_numpy(t):
    t = tf.convert_to_tensor(t)
    if t.dtype == tf.bfloat16:
        t = tf.cast(t, tf.float32)
    return t.numpy()


def expect(got, want, what):
    got, want = tf.convert_to_tensor(got), tf.convert_to_tensor(want)
    a, b = as_numpy(got), as_numpy(want)
    if got.dtype != want.dtype or a.shape != b.shape or not np.array_equal(a, b):
        raise AssertionError("%s: got %s %s %s, expected %s %s %s" % (
            what, got.dtype.name, a.shape, a.reshape(-1)[:8].tolist(), want.dtype.name,
            b.shape, b.reshape(-1)[:8].tolist()))


def close(got, want, tol, what):
    a, b = as_numpy(got).astype(np.float64), as_numpy(want).astype(np.float64)
    if a.shape != b.shape or not np.allclose(a, b, atol=tol, rtol=0):
        worst = np.abs(a - b).max() if a.shape == b.shape else "shape"
        raise AssertionError("%s: differs by %s (tolerance %g); got %s expected %s" % (
            what, worst, tol, a.reshape(-1)[:6].tolist(), b.reshape(-1)[:6].tolist()))


def reference(op, tensors, dtype):
    """The reduction computed locally from every rank's contribution."""
    if dtype == tf.bool:
        stack = np.stack([as_numpy(t) for t in tensors])
        out = stack.any(0) if op in (hvd.Sum, hvd.Max) else stack.all(0)
        return tf.constant(out)
    wide = np.complex128 if dtype.is_complex else (
        np.float64 if dtype.is_floating else np.int64)
    stack = np.stack([as_numpy(t).astype(wide) for t in tensors])
    if op == hvd.Sum:
        out = stack.sum(0)
    elif op == hvd.Average:
        out = stack.sum(0)
        out = out / len(tensors) if (dtype.is_floating or dtype.is_complex) else \
            np.fix(out / len(tensors)).astype(np.int64)  # truncated, as Horovod
    elif op == hvd.Min:
        out = stack.min(0)
    elif op == hvd.Max:
        out = stack.max(0)
    else:
        out = stack.prod(0)
    return tf.cast(tf.constant(out), dtype)


def ops_for(dtype):
    if dtype.is_complex:
        return [hvd.Sum, hvd.Average]
    if dtype == tf.bool:
        return [hvd.Sum, hvd.Min, hvd.Max, hvd.Product]
    return [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


def _expect_error(cls, fn, what, contains=()):
    try:
        fn()
    except cls as exc:
        for text in contains:
            assert text in str(exc), "%s: message %r lacks %r" % (what, str(exc)[:500], text)
        return exc
    except Exception as exc:  # noqa: BLE001
        raise AssertionError("%s: raised %s (%s), expected %s" % (
            what, type(exc).__name__, str(exc)[:500], cls.__name__))
    raise AssertionError("%s: no error, expected %s" % (what, cls.__name__))


# ------------------------------------------------------------------ identity

@check
def identity_and_facts():
    assert hvd.is_initialized()
    size, rank = hvd.size(), hvd.rank()
    assert 0 <= rank < size, (rank, size)
    assert 0 <= hvd.local_rank() < hvd.local_size() <= size
    assert 0 <= hvd.cross_rank() < hvd.cross_size() <= size
    if "HOROVOD_RANK" in os.environ:  # set by the plugin and by tandem-run
        assert rank == int(os.environ["HOROVOD_RANK"])
        assert size == int(os.environ["HOROVOD_SIZE"])
    for mode in MODES:
        facts = in_mode(mode, lambda: [hvd.rank_op(), hvd.size_op(), hvd.local_rank_op(),
                                       hvd.local_size_op(), hvd.process_set_included_op()])
        assert [int(f) for f in facts] == [rank, size, hvd.local_rank(), hvd.local_size(), 1], \
            (mode, facts)
    assert hvd.allgather_object(rank) == list(range(size))
    locals_ = hvd.allgather_object((hvd.cross_rank(), hvd.local_rank(), hvd.local_size()))
    assert hvd.is_homogeneous() == (len({l[2] for l in locals_}) == 1)
    assert len({(c, l) for c, l, _ in locals_}) == size, locals_
    assert hvd.mpi_built() is False and hvd.gloo_built() is False
    assert hvd.gpu_available() is False
    assert isinstance(hvd.nccl_built(), (bool, int))
    assert hvd.check_num_rank_power_of_2(4) and not hvd.check_num_rank_power_of_2(3)


# ------------------------------------------------------------------ allreduce

@check
def allreduce_every_dtype_and_op():
    size, rank = hvd.size(), hvd.rank()
    shape = (3, 5)
    for mode in MODES:
        for dtype in ALL:
            for op in ops_for(dtype):
                mine = contribution(rank, shape, dtype, op)
                want = reference(op, [contribution(r, shape, dtype, op) for r in range(size)],
                                 dtype)
                what = "%s allreduce %s op=%d" % (mode, dtype.name, op)
                got = in_mode(mode, lambda t: hvd.allreduce(t, op=op), mine)
                expect(got, want, what)
                expect(mine, contribution(rank, shape, dtype, op), what + ": input modified")


@check
def allreduce_sizes():
    # 0, 1, odd and large element counts; 0-dim; a tf.Variable as input.
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        for shape in [(0,), (0, 3), (1,), (17,), (3, 1, 7), (1 << 20) + 3, ()]:
            shape = shape if isinstance(shape, tuple) else (shape,)
            for dtype in [tf.float32, tf.int64, tf.bool, tf.float16]:
                mine = contribution(rank, shape, dtype)
                want = reference(hvd.Sum, [contribution(r, shape, dtype) for r in range(size)],
                                 dtype)
                got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum), mine)
                expect(got, want, "%s allreduce %s %s" % (mode, dtype.name, shape))
        var = tf.Variable(contribution(rank, (4,), tf.float32))
        got = in_mode(mode, lambda: hvd.allreduce(var, op=hvd.Max))
        expect(got, contribution(size - 1, (4,), tf.float32), mode + " allreduce of a Variable")


@check
def allreduce_scales_average_compression():
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        x = contribution(rank, (7,), tf.float64)
        total = reference(hvd.Sum, [contribution(r, (7,), tf.float64) for r in range(size)],
                          tf.float64)
        got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5,
                                                    postscale_factor=3.0), x)
        expect(got, total * 1.5, mode + " prescale 0.5 postscale 3")
        got = in_mode(mode, lambda t: hvd.allreduce(t), x)
        expect(got, total / size, mode + " default op is Average")
        got = in_mode(mode, lambda t: hvd.allreduce(t, average=False), x)
        expect(got, total, mode + " average=False")
        got = in_mode(mode, lambda t: hvd.allreduce(t, average=True), x)
        expect(got, total / size, mode + " average=True")
        f32 = contribution(rank, (33,), tf.float32)
        got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum,
                                                    compression=hvd.Compression.fp16), f32)
        expect(got, reference(hvd.Sum, [contribution(r, (33,), tf.float32)
                                        for r in range(size)], tf.float32), mode + " fp16")
        ints = contribution(rank, (5,), tf.int32)
        got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum,
                                                    compression=hvd.Compression.fp16), ints)
        expect(got, reference(hvd.Sum, [contribution(r, (5,), tf.int32) for r in range(size)],
                              tf.int32), mode + " fp16 leaves integers alone")


@check
def scaled_and_averaged_floats_match_tensorflow_bit_for_bit():
    # Horovod's test_tensorflow.py compares these with threshold 0 up to 3
    # ranks against TensorFlow's own arithmetic in the element type: an
    # Average of x on every rank against (x * n) / n, prescale f against
    # cast(f * x) * n, postscale against cast(f * (x * n)), the factor and
    # float16's product in float32; Product against reduce_prod. Values that
    # are not small integers, so that every rounding shows (float16's 3x
    # rounds before the division).
    size, rank = hvd.size(), hvd.rank()
    factor = 0.1915194503788923
    rows = 4 * size
    for mode in MODES:
        for dtype in [tf.float16, tf.float32, tf.float64]:
            x = tf.cast(tf.random.stateless_uniform([rows, 5], [7, 11], -100, 100), dtype)
            n = tf.constant(size, dtype)
            mine = slice(rank * 4, rank * 4 + 4)
            got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Average), x)
            expect(got, (x * n) / n, "%s %s Average" % (mode, dtype.name))
            got = in_mode(mode, lambda t: hvd.reducescatter(t, op=hvd.Average), x)
            expect(got, ((x * n) / n)[mine], "%s %s reducescatter Average" % (mode, dtype.name))
            # Product of different values on each rank against reduce_prod,
            # which multiplies in rank order, rounding each product.
            every = tf.cast(tf.random.stateless_uniform([size, 3, 5], [5, 3], -100, 100), dtype)
            got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Product), every[rank])
            expect(got, tf.math.reduce_prod(every, axis=0), "%s %s Product" % (mode, dtype.name))
            if dtype == tf.float64:
                continue  # Horovod's tests skip float64 scaling (a float32 TF op attribute)
            wide = tf.float32
            f = tf.constant(factor, wide)
            pre = tf.cast(f * tf.cast(x, wide), dtype) * n
            post = tf.cast(f * tf.cast(x * n, wide), dtype)
            got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=factor), x)
            expect(got, pre, "%s %s prescale" % (mode, dtype.name))
            got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum,
                                                        postscale_factor=factor), x)
            expect(got, post, "%s %s postscale" % (mode, dtype.name))
            got = in_mode(mode, lambda t: hvd.grouped_reducescatter(
                [t, t], op=hvd.Sum, prescale_factor=factor), x)
            expect(got[1], pre[mine], "%s %s reducescatter prescale" % (mode, dtype.name))
            got = in_mode(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum,
                                                            postscale_factor=factor), x)
            expect(got, post[mine], "%s %s reducescatter postscale" % (mode, dtype.name))


@check
def allreduce_indexed_slices():
    # Horovod allgathers values and indices; Average divides the values.
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        for op in [hvd.Sum, hvd.Average]:
            values = contribution(rank, (2, 3), tf.float32)
            indices = tf.constant([rank, rank + 1], dtype=tf.int64)

            def fn(v, i):
                out = hvd.allreduce(tf.IndexedSlices(v, i, dense_shape=[size + 1, 3]), op=op)
                assert isinstance(out, tf.IndexedSlices)
                return tf.convert_to_tensor(out)
            got = in_mode(mode, fn, values, indices)
            dense = np.zeros((size + 1, 3))
            for r in range(size):
                dense[[r, r + 1]] += as_numpy(contribution(r, (2, 3), tf.float32))
            what = "%s IndexedSlices op=%d" % (mode, op)
            if op == hvd.Average:  # values divided, then duplicates summed: round-off
                close(got, dense / size, 1e-6, what)
            else:
                expect(got, tf.constant(dense, tf.float32), what)
    slices = tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0]))
    _expect_error(NotImplementedError, lambda: hvd.allreduce(slices, op=hvd.Max), "Max sparse")
    _expect_error(NotImplementedError, lambda: hvd.allreduce(slices, op=hvd.Sum,
                                                             prescale_factor=2.0), "scaled")


@check
def grouped_allreduce():
    size, rank = hvd.size(), hvd.rank()
    dtypes = [tf.float32, tf.float64, tf.float16, tf.bfloat16]
    shapes = [(i + 2, 3) for i in range(len(dtypes))]
    for mode in MODES:
        for op in [hvd.Average, hvd.Sum, hvd.Max]:
            tensors = [contribution(rank, s, d) for s, d in zip(shapes, dtypes)]
            wants = [reference(op, [contribution(r, s, d) for r in range(size)], d)
                     for s, d in zip(shapes, dtypes)]
            got = in_mode(mode, lambda *ts: hvd.grouped_allreduce(list(ts), op=op), *tensors)
            for i, (g, w) in enumerate(zip(got, wants)):
                expect(g, w, "%s grouped_allreduce op=%d tensor %d" % (mode, op, i))
        # Dense and sparse tensors in one call.
        sparse_values = contribution(rank, (1, 2), tf.float32)

        def mixed(a, v):
            out = hvd.grouped_allreduce(
                [a, tf.IndexedSlices(v, tf.constant([rank]), dense_shape=[size, 2])],
                op=hvd.Sum)
            return out[0], tf.convert_to_tensor(out[1])
        a = contribution(rank, (4,), tf.float32)
        dense_out, sparse_out = in_mode(mode, mixed, a, sparse_values)
        expect(dense_out, reference(hvd.Sum, [contribution(r, (4,), tf.float32)
                                              for r in range(size)], tf.float32),
               mode + " grouped dense part")
        want = tf.concat([contribution(r, (1, 2), tf.float32) for r in range(size)], 0)
        expect(sparse_out, want, mode + " grouped sparse part")
    assert hvd.grouped_allreduce([]) == []


# ------------------------------------------------------------------ allgather

@check
def allgather_every_dtype_uneven():
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        for dtype in ALL:
            mine = contribution(rank, (rank + 1, 2, 3), dtype)
            want = tf.concat([contribution(r, (r + 1, 2, 3), dtype) for r in range(size)], 0)
            expect(in_mode(mode, hvd.allgather, mine), want, "%s allgather %s" % (mode, dtype))
        # A rank with no rows, and a large tensor.
        mine = contribution(rank, (rank % 2, 5), tf.float32)
        want = tf.concat([contribution(r, (r % 2, 5), tf.float32) for r in range(size)], 0)
        expect(in_mode(mode, hvd.allgather, mine), want, mode + " allgather with empty ranks")
        mine = contribution(rank, ((1 << 18) + rank, 3), tf.float32)
        want = tf.concat([contribution(r, ((1 << 18) + r, 3), tf.float32)
                          for r in range(size)], 0)
        expect(in_mode(mode, hvd.allgather, mine), want, mode + " large allgather")
        outs = in_mode(mode, lambda a, b: hvd.grouped_allgather([a, b]),
                       tf.fill([rank + 1], rank), tf.fill([1, 2], float(rank)))
        expect(outs[0], tf.concat([tf.fill([r + 1], r) for r in range(size)], 0),
               mode + " grouped_allgather 0")
        expect(outs[1], tf.concat([tf.fill([1, 2], float(r)) for r in range(size)], 0),
               mode + " grouped_allgather 1")
    _expect_error(hvd.TandemError, lambda: hvd.allgather(tf.constant(1.0)), "0-dim allgather",
                  contains=("0-dim",))


# ------------------------------------------------------------------ broadcast

@check
def broadcast_every_dtype_every_root():
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        for root in range(size):
            for dtype in ALL:
                mine = contribution(rank, (3, 4), dtype)
                got = in_mode(mode, lambda t: hvd.broadcast(t, root), mine)
                expect(got, contribution(root, (3, 4), dtype),
                       "%s broadcast %s from %d" % (mode, dtype.name, root))
            for shape in [(), (0,), (1 << 20) + 1]:
                shape = shape if isinstance(shape, tuple) else (shape,)
                got = in_mode(mode, lambda t: hvd.broadcast(t, root),
                              contribution(rank, shape, tf.float32))
                expect(got, contribution(root, shape, tf.float32),
                       "%s broadcast %s from %d" % (mode, shape, root))
            variables = [tf.Variable(contribution(rank, (2, 2), tf.float32)),
                         tf.Variable(contribution(rank, (3,), tf.int64))]
            values = in_mode(mode, lambda: hvd.broadcast_(variables, root))
            for v, value, want in zip(variables, values,
                                      [contribution(root, (2, 2), tf.float32),
                                       contribution(root, (3,), tf.int64)]):
                expect(v, want, "%s broadcast_ variable from %d" % (mode, root))
                expect(value, want, "%s broadcast_ value from %d" % (mode, root))
            variables = [tf.Variable(contribution(rank, (5,), tf.float32)) for _ in range(3)]
            # (in a graph it returns the op, which a tf.function runs without
            # being told: variable assignments are stateful)
            in_mode(mode, lambda: [hvd.broadcast_variables(variables, root_rank=root), None][1])
            for v in variables:
                expect(v, contribution(root, (5,), tf.float32),
                       "%s broadcast_variables from %d" % (mode, root))


# ------------------------------------------------------------------ alltoall

@check
def alltoall_with_and_without_splits():
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        base = tf.reshape(tf.range(size * 2, dtype=tf.float32), [size * 2, 1])
        got = in_mode(mode, hvd.alltoall, base + 100 * rank)
        want = tf.concat([(base + 100 * r)[2 * rank:2 * rank + 2] for r in range(size)], 0)
        expect(got, want, mode + " alltoall equal splits")
        for dtype in ALL:
            # Rank r sends (r + d) % 3 rows to rank d (some send nothing).
            splits = [(rank + d) % 3 for d in range(size)]
            rows = contribution(rank, (sum(splits), 2), dtype)
            out, received = in_mode(
                mode, lambda t, s: hvd.alltoall(t, splits=s), rows,
                tf.constant(splits, dtype=tf.int32))
            parts = []
            for r in range(size):
                theirs = [(r + d) % 3 for d in range(size)]
                start = sum(theirs[:rank])
                parts.append(contribution(r, (sum(theirs), 2), dtype)[start:start + theirs[rank]])
            expect(out, tf.concat(parts, 0), "%s alltoall splits %s" % (mode, dtype.name))
            expect(received, tf.constant([(r + rank) % 3 for r in range(size)], tf.int32),
                   mode + " received splits")
        # Splits as a Python list; nothing sent at all.
        out, received = in_mode(mode, lambda t: hvd.alltoall(t, splits=[0] * size),
                                tf.zeros([0, 3]))
        assert tuple(out.shape) == (0, 3) and as_numpy(received).tolist() == [0] * size


# ------------------------------------------------------------ reducescatter

@check
def reducescatter_uneven_rows():
    size, rank = hvd.size(), hvd.rank()
    rows = 2 * size + 1  # uneven on purpose: the first rank gets one more
    counts = [rows // size + (1 if r < rows % size else 0) for r in range(size)]
    start = sum(counts[:rank])
    for mode in MODES:
        for dtype in [tf.float32, tf.float64, tf.float16, tf.int32, tf.int16, tf.complex64]:
            for op in [hvd.Sum, hvd.Average]:
                mine = contribution(rank, (rows, 3), dtype)
                full = reference(op, [contribution(r, (rows, 3), dtype) for r in range(size)],
                                 dtype)
                got = in_mode(mode, lambda t: hvd.reducescatter(t, op=op), mine)
                expect(got, full[start:start + counts[rank]],
                       "%s reducescatter %s op=%d" % (mode, dtype.name, op))
        mine = contribution(rank, (rows,), tf.float32)
        got = in_mode(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum, prescale_factor=2.0,
                                                        postscale_factor=0.5), mine)
        full = reference(hvd.Sum, [contribution(r, (rows,), tf.float32) for r in range(size)],
                         tf.float32)
        expect(got, full[start:start + counts[rank]], mode + " reducescatter scales")
        outs = in_mode(mode, lambda a, b: hvd.grouped_reducescatter([a, b], op=hvd.Sum),
                       tf.ones([size, 2]) * (rank + 1), tf.ones([size * 3]) * rank)
        expect(outs[0], tf.fill([1, 2], float(sum(range(1, size + 1)))),
               mode + " grouped_reducescatter 0")
        expect(outs[1], tf.fill([3], float(sum(range(size)))), mode + " grouped_reducescatter 1")
    # The static shape in a graph is this rank's row count.
    traced = tf.function(lambda t: hvd.reducescatter(t, op=hvd.Sum), autograph=False)
    concrete = traced.get_concrete_function(tf.TensorSpec([rows, 3], tf.float32))
    assert concrete.structured_outputs.shape.as_list() == [counts[rank], 3], \
        concrete.structured_outputs.shape


# ------------------------------------------------------------------ gradients

def _gradients(mode, forward, x):
    """d sum(forward(x) * weights) / dx, eagerly or in tf.function."""
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        return tape.gradient(y, x)
    return in_mode(mode, fn, x)


@check
def gradients_of_collectives():
    size, rank = hvd.size(), hvd.rank()
    for mode in MODES:
        for dtype in [tf.float32, tf.float64]:
            x = tf.fill([3], tf.cast(rank + 1, dtype))
            weight = tf.cast(rank + 1, dtype)
            # allreduce Sum: d/dx_r of sum_k w_k * sum(allreduce) = allreduce(w) = sum_k w_k.
            g = _gradients(mode, lambda t: tf.reduce_sum(hvd.allreduce(t, op=hvd.Sum) * weight),
                           x)
            expect(g, tf.fill([3], tf.cast(sum(k + 1 for k in range(size)), dtype)),
                   mode + " allreduce Sum gradient")
            # Average with scales: the same op and scales on the way back.
            g = _gradients(mode, lambda t: tf.reduce_sum(
                hvd.allreduce(t, op=hvd.Average, prescale_factor=2.0) * weight), x)
            want = 2.0 * sum(k + 1 for k in range(size)) / size
            close(g, tf.fill([3], want), 1e-12, mode + " allreduce Average gradient")
            g = _gradients(mode, lambda t: tf.add_n([tf.reduce_sum(o) * weight for o in
                                                     hvd.grouped_allreduce([t, t * 2],
                                                                           op=hvd.Sum)]), x)
            expect(g, tf.fill([3], tf.cast(3 * sum(k + 1 for k in range(size)), dtype)),
                   mode + " grouped_allreduce gradient")
        # allgather (Horovod): this rank's rows of the gradient averaged over ranks.
        x = tf.ones([rank + 1, 2])
        weights = tf.reshape(tf.range(sum(r + 1 for r in range(size)), dtype=tf.float32),
                             [-1, 1]) * (rank + 1)
        g = _gradients(mode, lambda t: tf.reduce_sum(hvd.allgather(t) * weights), x)
        offset = sum(r + 1 for r in range(rank))
        rows = np.arange(offset, offset + rank + 1, dtype=np.float64).reshape(-1, 1)
        mean_weight = sum(k + 1 for k in range(size)) / size
        close(g, np.repeat(rows * mean_weight, 2, axis=1), 1e-5, mode + " allgather gradient")
        # broadcast (Horovod): averaged gradient on the root, zero elsewhere.
        for root in range(size):
            g = _gradients(mode, lambda t: tf.reduce_sum(hvd.broadcast(t, root) * (rank + 1.0)),
                           tf.fill([2], float(rank)))
            want = sum(k + 1.0 for k in range(size)) / size if rank == root else 0.0
            close(g, tf.fill([2], want), 1e-6, "%s broadcast gradient root %d" % (mode, root))
        # alltoall: element d of x went to rank d, whose loss weighs it by d + 1.
        g = _gradients(mode, lambda t: tf.reduce_sum(hvd.alltoall(t) * (rank + 1.0)),
                       tf.range(size, dtype=tf.float32))
        expect(g, tf.range(1, size + 1, dtype=tf.float32), mode + " alltoall gradient")
        splits = [1] * size

        def with_splits(t):
            out, _ = hvd.alltoall(t, splits=splits)
            return tf.reduce_sum(out * (rank + 1.0))
        g = _gradients(mode, with_splits, tf.range(size, dtype=tf.float32))
        expect(g, tf.range(1, size + 1, dtype=tf.float32), mode + " alltoall(splits) gradient")
        # reducescatter (Horovod): allgather of the gradient, times size for Sum.
        for op, factor in [(hvd.Sum, size), (hvd.Average, 1)]:
            g = _gradients(mode, lambda t: tf.reduce_sum(hvd.reducescatter(t, op=op) *
                                                         (rank + 1.0)),
                           tf.ones([size * 2]))
            want = [float(factor * (r + 1)) for r in range(size) for _ in range(2)]
            expect(g, tf.constant(want), "%s reducescatter op=%d gradient" % (mode, op))


# ------------------------------------------------------ DistributedGradientTape

def _model_variables(seed=0):
    g = np.random.default_rng(seed)
    return [tf.Variable(g.standard_normal((4, 3)).astype(np.float32), name="w"),
            tf.Variable(g.standard_normal((3,)).astype(np.float32), name="b"),
            tf.Variable(g.standard_normal((10, 3)).astype(np.float32), name="emb")]


def _data(rank):
    g = np.random.default_rng(100 + rank)
    x = g.standard_normal((5, 4)).astype(np.float32)
    ids = np.array([rank % 10, (rank + 3) % 10, rank % 10, 7], dtype=np.int64)
    return tf.constant(x), tf.constant(ids)


def _loss(variables, x, ids):
    w, b, emb = variables
    h = tf.matmul(x, w) + b
    return tf.reduce_sum(h * h) + tf.reduce_sum(tf.gather(emb, ids) ** 2)


def _local_grads(variables, rank):
    x, ids = _data(rank)
    with tf.GradientTape() as tape:
        loss = _loss(variables, x, ids)
    return [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]


def _tape_grads(mode, variables, kwargs, local=()):
    x, ids = _data(hvd.rank())

    def step(x, ids):
        with tf.GradientTape() as tape:
            loss = _loss(variables, x, ids)
        tape = hvd.DistributedGradientTape(tape, **kwargs)
        for v in local:
            tape.register_local_source(v)
        return tape.gradient(loss, variables)
    return in_mode(mode, step, x, ids)


class _CountCalls:
    """Counts the engine grouped allreduces and allgathers started."""

    def __init__(self):
        import tandem._arrays as arrays
        self.arrays = arrays
        self.grouped = self.gathers = 0

    def __enter__(self):
        self.saved = (self.arrays.start_grouped_allreduce, self.arrays.start_allgather)

        def grouped(*args, **kwargs):
            self.grouped += 1
            return self.saved[0](*args, **kwargs)

        def gather(*args, **kwargs):
            self.gathers += 1
            return self.saved[1](*args, **kwargs)
        self.arrays.start_grouped_allreduce, self.arrays.start_allgather = grouped, gather
        return self

    def __exit__(self, *exc):
        self.arrays.start_grouped_allreduce, self.arrays.start_allgather = self.saved


@check
def distributed_gradient_tape_matches_averaged_gradients():
    size = hvd.size()
    variables = _model_variables()
    everyone = [_local_grads(variables, r) for r in range(size)]
    summed = [tf.add_n([g[i] for g in everyone]) for i in range(3)]
    cases = [({}, 1.0 / size, 1e-5, 1), ({"op": hvd.Sum}, 1.0, 1e-5, 1),
             ({"gradient_predivide_factor": 2.0}, 1.0 / size, 1e-5, 1),
             ({"groups": 2}, 1.0 / size, 1e-5, 2),
             ({"groups": [[variables[0]], [variables[1]]]}, 1.0 / size, 1e-5, 2),
             ({"compression": hvd.Compression.fp16}, 1.0 / size, 2e-2, 1),
             ({"sparse_as_dense": True}, 1.0 / size, 1e-5, 1),
             ({"num_groups": 2}, 1.0 / size, 1e-5, 2)]
    for mode in MODES:
        for kwargs, factor, tol, engine_groups in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                with _CountCalls() as calls:
                    grads = _tape_grads(mode, variables, kwargs)
            what = "%s DistributedGradientTape(%s)" % (mode, kwargs)
            sparse = not kwargs.get("sparse_as_dense")
            assert isinstance(grads[2], tf.IndexedSlices) == sparse, \
                what + ": embedding gradient type %s" % type(grads[2]).__name__
            if size > 1:
                # One engine grouped allreduce per group, whatever the number
                # of variables; the sparse gradient as values + indices.
                assert calls.grouped == engine_groups, (what, calls.grouped)
                assert calls.gathers == (2 if sparse else 0), (what, calls.gathers)
            for i, (g, s) in enumerate(zip(grads, summed)):
                close(tf.convert_to_tensor(g), s * factor, tol, "%s gradient %d" % (what, i))
        # Every rank gets the same bits.
        grads = _tape_grads(mode, variables, {})
        flat = [as_numpy(tf.convert_to_tensor(g)) for g in grads]
        for other in hvd.allgather_object(flat):
            for a, b in zip(other, flat):
                assert np.array_equal(a, b), mode + ": gradients differ between ranks"


@check
def distributed_gradient_tape_in_one_op_per_step():
    # In a graph the whole step's reduction is one op, not one per variable.
    variables = _model_variables()
    x, ids = _data(hvd.rank())

    @tf.function(autograph=False)
    def step(x, ids):
        with tf.GradientTape() as tape:
            loss = _loss(variables, x, ids)
        return hvd.DistributedGradientTape(tape).gradient(loss, variables)
    graph = step.get_concrete_function(x, ids).graph
    pyfuncs = [op for op in graph.get_operations() if op.type in ("PyFunc", "EagerPyFunc")]
    want = 1 if hvd.size() > 1 else 0  # a world of one keeps its gradients
    assert len(pyfuncs) == want, [op.name for op in pyfuncs]


@check
def distributed_gradient_tape_local_sources_and_sets():
    size, rank = hvd.size(), hvd.rank()
    variables = _model_variables()
    everyone = [_local_grads(variables, r) for r in range(size)]
    mine = everyone[rank]
    for mode in MODES:
        grads = _tape_grads(mode, variables, {}, local=[variables[1]])
        close(grads[1], mine[1] / size, 1e-6, mode + " local source scaled by 1/size")
        close(grads[0], tf.add_n([g[0] for g in everyone]) / size, 1e-5,
              mode + " shared source averaged")
        grads = _tape_grads(mode, variables, {"scale_local_gradients": False},
                            local=[variables[1]])
        close(grads[1], mine[1], 1e-6, mode + " local source unscaled")
    if size < 2:
        return
    evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
    try:
        members = [r for r in range(size) if r % 2 == 0]
        for mode in MODES:
            grads = _tape_grads(mode, variables, {"process_set": evens, "sparse_as_dense": True})
            if rank % 2 == 0 and len(members) > 1:
                want = tf.add_n([everyone[r][0] for r in members]) / len(members)
            else:  # outside the set, or a set of one: local gradients
                want = mine[0]
            close(grads[0], want, 1e-5, mode + " tape over a process set")
    finally:
        hvd.remove_process_set(evens)


@check
def tf1_graph_and_session():
    # TF1 style: a tf.Graph run by a Session (no tf.function): the ops work
    # there too, and broadcast_global_variables is meaningful only there.
    size, rank = hvd.size(), hvd.rank()
    _expect_error(RuntimeError, lambda: hvd.broadcast_global_variables(0),
                  "broadcast_global_variables eagerly", contains=("eager",))
    with tf.Graph().as_default():
        v = tf.compat.v1.Variable(tf.fill([3], float(rank + 1)))
        summed = hvd.allreduce(tf.fill([2], float(rank)), op=hvd.Sum)
        bcast = hvd.broadcast_global_variables(size - 1)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            got = session.run(summed)
            session.run(bcast)
            value = session.run(v)
    assert got.tolist() == [float(sum(range(size)))] * 2, got
    assert value.tolist() == [float(size)] * 3, value


@check
def legacy_distributed_optimizer():
    size, rank = hvd.size(), hvd.rank()
    v = tf.Variable([1.0, 2.0])
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.5))
    opt.minimize(lambda: tf.reduce_sum(v * float(rank + 1)), var_list=[v])
    step = 0.5 * sum(r + 1.0 for r in range(size)) / size
    close(v, tf.constant([1.0 - step, 2.0 - step]), 1e-6, "tf.compat.v1 DistributedOptimizer")


# ------------------------------------------------------- objects

@check
def objects():
    size, rank = hvd.size(), hvd.rank()
    obj = {"rank": rank, "list": list(range(rank)), "a": np.full((2,), rank)}
    got = hvd.broadcast_object(obj, root_rank=size - 1)
    assert got["rank"] == size - 1 and got["list"] == list(range(size - 1))
    assert np.array_equal(got["a"], np.full((2,), size - 1))
    gathered = hvd.allgather_object({"r": rank, "s": "x" * rank})
    assert gathered == [{"r": r, "s": "x" * r} for r in range(size)], gathered
    fn = hvd.broadcast_object_fn(root_rank=0)
    assert fn(("from", rank)) == ("from", 0)


# ------------------------------------------------------------------ errors

@check
def errors_then_next_call_works():
    import tandem.errors as te
    size, rank = hvd.size(), hvd.rank()
    assert issubclass(te.MismatchError, HorovodInternalError)
    if size > 1:
        # Shapes differ between ranks: every rank gets the named error, eagerly
        # as the engine's MismatchError, which is also Horovod's
        # FailedPreconditionError ...
        exc = _expect_error(te.MismatchError,
                            lambda: hvd.allreduce(tf.ones(rank + 1), name="bad.shape"),
                            "eager mismatched shapes", contains=("bad.shape",))
        assert isinstance(exc, tf.errors.FailedPreconditionError), type(exc).__mro__
        assert isinstance(exc, HorovodInternalError), type(exc).__mro__
        expect(hvd.allreduce(tf.ones(3), op=hvd.Sum, name="bad.shape"),
               tf.fill([3], float(size)), "the failed name works again")
        # ... and in a graph as TensorFlow's FailedPreconditionError (Horovod's
        # type), carrying the engine's class and message.
        bad = tf.function(lambda t: hvd.allreduce(t, name="bad.graph"), autograph=False)
        _expect_error(tf.errors.FailedPreconditionError, lambda: bad(tf.ones(rank + 1)),
                      "graph mismatched shapes", contains=("MismatchError", "bad.graph"))
        expect(bad(tf.ones(2)), tf.ones(2), "the same function on good shapes")
        dtype = tf.float32 if rank == 0 else tf.float64
        _expect_error(te.MismatchError,
                      lambda: hvd.allreduce(tf.ones(2, dtype=dtype), name="bad.type"),
                      "mismatched types", contains=("bad.type",))
        _expect_error(te.MismatchError,
                      lambda: hvd.broadcast(tf.ones(2), root_rank=rank, name="bad.root"),
                      "mismatched roots", contains=("bad.root",))
        expect(hvd.broadcast(tf.fill([2], float(rank)), 0, name="bad.root"), tf.zeros(2),
               "broadcast after a root mismatch")
    # Refused before the engine (at trace time in a graph).
    for mode in MODES:
        _expect_error(te.InvalidArgumentError,
                      lambda: in_mode(mode, lambda: hvd.allreduce(tf.ones(2), op=42)), "bad op")
        _expect_error(te.InvalidArgumentError,
                      lambda: in_mode(mode, lambda: hvd.allreduce(tf.constant([True]),
                                                                  op=hvd.Average)),
                      "bool Average", contains=("bool",))
        _expect_error(te.InvalidArgumentError,
                      lambda: in_mode(mode, lambda: hvd.allreduce(tf.constant(["a"]))),
                      "strings", contains=("string",))
        if size & (size - 1):
            _expect_error(NotImplementedError,
                          lambda: in_mode(mode, lambda: hvd.allreduce(tf.ones(2),
                                                                      op=hvd.Adasum)),
                          "Adasum on a non-power-of-two world", contains=("power of 2",))
        else:  # equal tensors: Adasum gives the tensor back
            expect(in_mode(mode, lambda: hvd.allreduce(tf.fill([2], 3.0), op=hvd.Adasum)),
                   tf.fill([2], 3.0), "Adasum of equal tensors")
        _expect_error(te.InvalidArgumentError,
                      lambda: in_mode(mode, lambda: hvd.allreduce(tf.ones(2),
                                                                  process_set=[0])),
                      "process_set not a ProcessSet")
    jit = tf.function(lambda t: hvd.allreduce(t), jit_compile=True, autograph=False)
    _expect_error(te.UnsupportedError, lambda: jit(tf.ones(2)), "XLA",
                  contains=("jit_compile",))
    expect(hvd.allreduce(tf.ones(3), op=hvd.Sum), tf.fill([3], float(size)),
           "allreduce after every error")


@check
def collectives_in_a_graph_loop():
    # A collective in the body of a tf.range loop in tf.function: one
    # engine operation per iteration, in order, under the same name.
    size = hvd.size()

    @tf.function
    def loop(n):
        acc = tf.zeros(2)
        for i in tf.range(n):
            acc += hvd.allreduce(tf.ones(2) * tf.cast(i + hvd.rank(), tf.float32), op=hvd.Sum)
        return acc
    for n in (0, 1, 7):
        want = float(sum(i + r for i in range(n) for r in range(size)))
        expect(loop(tf.constant(n)), tf.fill([2], want), "loop of %d allreduces" % n)


# ------------------------------------------------------- sets, join, barrier

@check
def process_sets_join_barrier():
    size, rank = hvd.size(), hvd.rank()
    hvd.barrier()
    in_mode("graph", lambda: hvd.barrier())
    if size >= 2:
        evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
        try:
            for mode in MODES:
                if rank % 2 == 0:
                    assert evens.included() and evens.rank() == rank // 2
                    # Unnamed: names are counted per set, so calls by the
                    # members only do not shift the names of the others.
                    got = in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum,
                                                                process_set=evens),
                                  tf.constant([float(rank)]))
                    expect(got, tf.constant([float(sum(range(0, size, 2)))]),
                           mode + " allreduce in a set")
                    got = in_mode(mode, lambda t: hvd.allgather(t, process_set=evens),
                                  tf.constant([rank]))
                    expect(got, tf.constant(list(range(0, size, 2))), mode + " allgather in set")
                    assert int(in_mode(mode, lambda: hvd.size_op(evens.process_set_id))) == \
                        len(range(0, size, 2))
                else:
                    assert not evens.included()
                    assert int(in_mode(mode, lambda: hvd.process_set_included_op(
                        evens.process_set_id))) == 0
                expect(in_mode(mode, lambda t: hvd.allreduce(t, op=hvd.Sum), tf.ones(1)),
                       tf.constant([float(size)]), mode + " global set beside another set")
        finally:
            hvd.remove_process_set(evens)
    # A set the engine does not know is refused at the call with ValueError,
    # in a graph while it is traced (Horovod's ProcessSet.size() does that).
    fake = hvd.ProcessSet([0])
    fake.process_set_id = 1000  # never registered, as Horovod's test does
    traced = tf.function(lambda t: hvd.allreduce(t, process_set=fake), autograph=False)
    for what, call in (("eagerly", lambda: hvd.allreduce(tf.ones(1), process_set=fake)),
                       ("while tracing", lambda: traced.get_concrete_function(
                           tf.TensorSpec([1], tf.float32)))):
        try:
            call()
        except ValueError as exc:
            assert "not a process set of this job" in str(exc), (what, exc)
        else:
            raise AssertionError("an unknown process set was accepted " + what)
    # Uneven data: rank r runs r + 1 steps, then joins.
    total = tf.zeros(1)
    for _ in range(rank + 1):
        total += hvd.allreduce(tf.ones(1), op=hvd.Sum, name="join.step")
    last = hvd.join()
    assert int(last) in range(size), last
    # Step s has the ranks r >= s still in it: size - s contributors.
    expect(total, tf.constant([float(sum(size - s for s in range(rank + 1)))]),
           "allreduce with joined ranks")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    hvd.init()
    return run_checks([fn for fn in CHECKS if not wanted or fn.__name__ in wanted])


if __name__ == "__main__":
    sys.exit(main())

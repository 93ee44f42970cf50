"""Every tandem.keras feature, run on every rank, with values checked against
what each rank contributed. Run as N ranks (tandem-run -np N, or srun
--horovod=on) under the Keras backend named by KERAS_BACKEND (tensorflow, the
default, or torch); each rank prints "PASS <check> rank R" or "FAIL ..." per
check and exits 1 if any failed. ``--only a,b`` runs a subset.

Written against ``horovod.keras`` (the Horovod name every backend can
import); one check makes sure ``horovod.tensorflow.keras`` is the same API.

Contributions are functions of the rank (small integers), so every rank
knows what every other rank sent and the exact expected result: sums and
means of them are exact in float32 for up to 4 ranks, so most checks compare
bit for bit. Where a check would pass without any communication (one rank),
it says so by comparing against a value that differs between ranks only
when there are several.
"""

import functools
import os
import sys
import tempfile
import warnings

import numpy as np

import keras
from keras import ops

import horovod.keras as hvd
from tandem.keras import _backend

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    import keras_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers import keras_checks

BACKEND = keras.backend.backend()
CHECKS = keras_checks.Registry()


def check(min_size=1, backends=("tensorflow", "torch")):
    return CHECKS.check(min_size, backends=backends)


# ------------------------------------------------------------------ helpers
# (keras_checks: what each rank contributes, and the comparisons)

def numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


contribution, mean_of_ranks, sum_of_ranks, everyone = (
    keras_checks.contribution, keras_checks.mean_of_ranks, keras_checks.sum_of_ranks,
    keras_checks.everyone)
expect_equal = functools.partial(keras_checks.expect_equal, numpy=numpy)
expect_same_on_every_rank = functools.partial(keras_checks.expect_same_on_every_rank,
                                              numpy=numpy)


def variables(shapes, dtype="float32"):
    return [keras.Variable(np.zeros(s), dtype=dtype) for s in shapes]


def tensors(arrays, dtype="float32"):
    return [ops.convert_to_tensor(np.asarray(a), dtype=dtype) for a in arrays]


def tf_function(fn):
    import tensorflow as tf
    return tf.function(fn)


SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


def small_model(seed_value=None, built=True):
    init = keras.initializers.Constant(seed_value) if seed_value is not None else "glorot_uniform"
    layers = [keras.layers.Dense(4, activation="relu", kernel_initializer=init,
                                 bias_initializer=init if seed_value is not None else "zeros"),
              keras.layers.Dense(1, kernel_initializer=init)]
    if built:
        layers.insert(0, keras.Input((3,)))
    return keras.Sequential(layers)


def rank_data(n=32, rank=None):
    rank = hvd.rank() if rank is None else rank
    rs = np.random.RandomState(100 + rank)
    x = rs.randn(n, 3).astype("float32")
    y = (x.sum(axis=1, keepdims=True) * (rank + 1)).astype("float32")
    return x, y


# ------------------------------------------------------------------ optimizer

@check()
def optimizer_averages_gradients():
    r = hvd.rank()
    for dtype in ("float32", "float64"):
        vs = variables(SHAPES, dtype)
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0))
        grads = tensors([contribution(r, s) for s in SHAPES], dtype)
        opt.apply(grads, vs)
        for v, s in zip(vs, SHAPES):
            expect_equal(v, -mean_of_ranks(s), "after apply %s %s" % (dtype, s))
        opt.apply_gradients(zip(grads, vs))
        for v, s in zip(vs, SHAPES):
            expect_equal(v, -2 * mean_of_ranks(s), "after apply_gradients %s %s" % (dtype, s))
        if int(numpy(opt.iterations)) != 2:
            raise AssertionError("iterations %s after 2 steps" % numpy(opt.iterations))


@check()
def none_gradient_is_left_alone():
    r = hvd.rank()
    a, b = variables([(4,), (2,)])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras warns that b has no gradient
        opt.apply([tensors([contribution(r, (4,))])[0], None], [a, b])
    expect_equal(a, -mean_of_ranks((4,)), "a")
    expect_equal(b, np.zeros(2), "b (no gradient)")


@check()
def op_sum_and_predivide():
    r = hvd.rank()
    (v,) = variables([(6,)])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), op=hvd.Sum)
    opt.apply(tensors([contribution(r, (6,))]), [v])
    expect_equal(v, -sum_of_ranks((6,)), "op=Sum")
    (w,) = variables([(6,)])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                   gradient_predivide_factor=4.0)
    opt.apply(tensors([contribution(r, (6,))]), [w])
    expect_equal(w, -mean_of_ranks((6,)), "gradient_predivide_factor=4", rtol=1e-6)
    for bad in (dict(op=hvd.Adasum), dict(op=hvd.Sum, gradient_predivide_factor=2.0),
                dict(backward_passes_per_step=0), dict(groups=-1)):
        try:
            hvd.DistributedOptimizer(keras.optimizers.SGD(), **bad)
        except ValueError:
            continue
        raise AssertionError("DistributedOptimizer(%s) was accepted" % bad)


@check()
def compression_fp16():
    r = hvd.rank()
    vs = variables(SHAPES)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                   compression=hvd.Compression.fp16)
    opt.apply(tensors([contribution(r, s) for s in SHAPES]), vs)
    for v, s in zip(vs, SHAPES):
        if keras.backend.standardize_dtype(v.dtype) != "float32":
            raise AssertionError("variable dtype changed to %s" % v.dtype)
        expect_equal(v, -mean_of_ranks(s), "fp16 %s" % (s,))


def count_reductions(fn):
    calls = []
    original = _backend.grouped_allreduce

    def counting(tensors_, *args, **kwargs):
        calls.append(len(tensors_))
        return original(tensors_, *args, **kwargs)

    _backend.grouped_allreduce = counting
    try:
        fn()
    finally:
        _backend.grouped_allreduce = original
    return calls


@check()
def one_grouped_allreduce_per_step_and_groups():
    r = hvd.rank()
    for kwargs, want in ((dict(), [4]), (dict(num_groups=2), [2, 2]), (dict(groups=3), [2, 1, 1]),
                         ("list", [2, 1, 1])):
        vs = variables(SHAPES)
        if kwargs == "list":
            kwargs = dict(groups=[[vs[0], vs[2]]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # num_groups, as Horovod
            opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), **kwargs)
        calls = count_reductions(lambda: opt.apply(
            tensors([contribution(r, s) for s in SHAPES]), vs))
        if sorted(calls, reverse=True) != want:
            raise AssertionError("%s: grouped allreduces of %s tensors, expected %s"
                                 % (kwargs, calls, want))
        for v, s in zip(vs, SHAPES):
            expect_equal(v, -mean_of_ranks(s), "%s %s" % (kwargs, s))


def run_accumulation(compiled):
    r, n = hvd.rank(), 3
    for average in (False, True):
        (v,) = variables([(4,)])
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                       backward_passes_per_step=n,
                                       average_aggregated_gradients=average)
        grad_var = keras.Variable(np.zeros(4), dtype="float32")

        def step():
            opt.apply([ops.convert_to_tensor(grad_var)], [v])

        step_fn = tf_function(step) if compiled else step
        expected = np.zeros(4)
        for s in range(7):
            grad_var.assign(contribution(r, (4,), s).astype("float32"))
            calls = count_reductions(step_fn) if not compiled else (step_fn() or [])
            if (s + 1) % n == 0:
                block = sum(mean_of_ranks((4,), t) for t in range(s + 1 - n, s + 1))
                expected = expected - (block / n if average else block)
                if not compiled and calls != [1]:
                    raise AssertionError("step %d: reductions %s, expected one" % (s, calls))
            elif not compiled and calls:
                raise AssertionError("step %d reduced (%s) before %d passes" % (s, calls, n))
            expect_equal(v, expected, "average=%s step %d" % (average, s), rtol=1e-6)
            if int(numpy(opt.iterations)) != s + 1:
                raise AssertionError("iterations %s after %d steps" % (numpy(opt.iterations),
                                                                        s + 1))


@check()
def backward_passes_per_step():
    run_accumulation(compiled=False)


@check(backends=("tensorflow",))
def backward_passes_per_step_in_tf_function():
    run_accumulation(compiled=True)


@check(backends=("tensorflow",))
def averages_inside_tf_function():
    r = hvd.rank()
    vs = variables(SHAPES)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0))
    grads = tensors([contribution(r, s) for s in SHAPES])
    step = tf_function(lambda: opt.apply(grads, vs))
    for n in (1, 2, 3):
        step()
        for v, s in zip(vs, SHAPES):
            expect_equal(v, -n * mean_of_ranks(s), "tf.function step %d %s" % (n, s))


@check()
def local_variables():
    r, size = hvd.rank(), hvd.size()
    for scale in (True, False):
        shared, local = variables([(4,), (4,)])
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                       scale_local_gradients=scale)
        opt.register_local_var(local)
        g = tensors([contribution(r, (4,))])[0]
        opt.apply([g, g], [shared, local])
        expect_equal(shared, -mean_of_ranks((4,)), "shared")
        expect_equal(local, -contribution(r, (4,)) / (size if scale else 1),
                     "local, scale_local_gradients=%s" % scale, rtol=1e-6)
    model = small_model(seed_value=0.1)
    opt = hvd.PartialDistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                          local_layers=model.layers[0])
    keys = {opt._var_key(v) for v in model.layers[0].trainable_weights}
    if keys != opt._tandem_state.local_keys:
        raise AssertionError("PartialDistributedOptimizer did not register the local layer")


@check(backends=("tensorflow",))
def sparse_gradients():
    import tensorflow as tf
    r = hvd.rank()
    rows = [r % 6, (r + 2) % 6, (r + 2) % 6]
    weights = np.arange(6, dtype=np.float32).reshape(3, 2) + r

    def dense_grad(rank):
        g = np.zeros((6, 2))
        rk = [rank % 6, (rank + 2) % 6, (rank + 2) % 6]
        for row, w in zip(rk, np.arange(6, dtype=np.float32).reshape(3, 2) + rank):
            g[row] += w
        return g

    expected = -np.mean([dense_grad(k) for k in range(hvd.size())], axis=0)
    for sparse_as_dense in (False, True):
        for compiled in (False, True):
            (table,) = variables([(6, 2)])
            opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0),
                                           sparse_as_dense=sparse_as_dense)

            def step():
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(tf.gather(table.value, rows) * weights)
                grad = tape.gradient(loss, table.value)
                if not isinstance(grad, tf.IndexedSlices):
                    raise AssertionError("expected a sparse gradient, got %s" % type(grad))
                opt.apply([grad], [table])

            (tf_function(step) if compiled else step)()
            expect_equal(table, expected, "sparse_as_dense=%s compiled=%s"
                         % (sparse_as_dense, compiled), rtol=1e-6)


@check(min_size=3)
def process_set():
    r, size = hvd.rank(), hvd.size()
    members = list(range(size - 1))
    ps = hvd.add_process_set(members)
    try:
        (v,) = variables([(5,)])
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), process_set=ps)
        opt.apply(tensors([contribution(r, (5,))]), [v])
        if r in members:
            want = -np.mean([contribution(k, (5,)) for k in members], axis=0)
        else:
            want = -contribution(r, (5,))
        expect_equal(v, want, "process set %s" % members)
    finally:
        hvd.remove_process_set(ps)


@check(min_size=3)
def broadcast_variables_in_a_process_set():
    """root_rank is a global rank, also in a set: in the set of ranks 1..N-1
    root 1 is the set's rank 0, and rank 2 (set rank 1, the number of the
    root) must still take the root's values."""
    r, size = hvd.rank(), hvd.size()
    members = list(range(1, size))
    ps = hvd.add_process_set(members)
    try:
        if r in members:
            (v,) = variables([(4,)])
            v.assign(np.full((4,), float(r)))
            hvd.broadcast_variables([v], root_rank=1, process_set=ps)
            expect_equal(v, np.full((4,), 1.0), "broadcast_variables root 1 in %s" % members)
    finally:
        hvd.remove_process_set(ps)


@check(min_size=2)
def mismatch_raises_on_every_rank_then_next_step_works():
    r = hvd.rank()
    steps = [("eager", lambda f: f())]
    if BACKEND == "tensorflow":
        steps.append(("tf.function", lambda f: tf_function(f)()))
    for how, run in steps:
        # Same name on every rank, so both steps use the same engine names.
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), name="mismatch")
        bad = keras.Variable(np.zeros(3 if r == 0 else 4), dtype="float32")
        try:
            run(lambda: opt.apply([ops.ones_like(bad)], [bad]))
        except Exception as exc:  # noqa: BLE001 - TF wraps the engine's error
            text = str(exc)
            if "MismatchError" not in text and "mismatch" not in text.lower():
                raise AssertionError("%s: not the engine's mismatch: %s: %s"
                                     % (how, type(exc).__name__, text[:2000]))
            if "mismatch.grads.0" not in text:
                raise AssertionError("%s: the error does not name the tensor: %s"
                                     % (how, text[:2000]))
        else:
            raise AssertionError("%s: shapes (3,) vs (4,) reduced without an error" % how)
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), name="mismatch")
        (good,) = variables([(4,)])
        grad = tensors([contribution(r, (4,))])[0]
        run(lambda: opt.apply([grad], [good]))
        expect_equal(good, -mean_of_ranks((4,)), "%s: the step after the mismatch" % how)


@check()
def config_round_trip():
    base = keras.optimizers.Adam(learning_rate=0.003, beta_1=0.8)
    opt = hvd.DistributedOptimizer(base)
    cfg = opt.get_config()
    if cfg != base.get_config():
        raise AssertionError("config differs from the wrapped optimizer's:\n%s\n%s"
                             % (cfg, base.get_config()))
    if type(opt).__name__ != "Adam" or not isinstance(opt, type(base)):
        raise AssertionError("class %s is not an Adam" % type(opt))
    for copy in (opt.from_config(cfg), type(opt).from_config(cfg)):
        if copy.get_config() != cfg or type(copy) is not type(opt):
            raise AssertionError("from_config gave %s %s" % (type(copy), copy.get_config()))
    serialized = keras.optimizers.serialize(opt)
    plain = keras.optimizers.deserialize(serialized)
    if hasattr(plain, "_tandem") or type(plain).__name__ != "Adam":
        raise AssertionError("plain Keras deserialized %s" % type(plain))
    if opt.variables() != opt.variables:
        raise AssertionError("optimizer.variables() differs from optimizer.variables")
    opt.lr = 0.5
    if abs(float(numpy(opt.learning_rate)) - 0.5) > 1e-7 or opt.lr is not opt.learning_rate:
        raise AssertionError("optimizer.lr is not learning_rate")
    try:
        hvd.DistributedOptimizer(opt)
    except ValueError:
        pass
    else:
        raise AssertionError("a DistributedOptimizer was wrapped twice")


# ------------------------------------------------------------------ model.fit

def fit_and_compare(run_eagerly, passes=1):
    keras.utils.set_random_seed(7 + hvd.rank())  # different initial weights per rank
    model = small_model()
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.01),
                                   backward_passes_per_step=passes)
    model.compile(optimizer=opt, loss="mse", run_eagerly=run_eagerly)
    x, y = rank_data(48)
    before = [numpy(w) for w in model.weights]
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    after = [numpy(w) for w in model.weights]
    if all(np.array_equal(a, b) for a, b in zip(before, after)):
        raise AssertionError("training did not move the weights")
    expect_same_on_every_rank(model.weights, "weights after fit")
    expect_same_on_every_rank(opt.variables, "optimizer variables after fit")
    if int(numpy(opt.iterations)) != 12:
        raise AssertionError("iterations %s after 12 steps" % numpy(opt.iterations))


@check()
def fit_compiled_weights_identical_on_every_rank():
    fit_and_compare(run_eagerly=False)
    fit_and_compare(run_eagerly=False, passes=2)


@check()
def fit_eager_weights_identical_on_every_rank():
    fit_and_compare(run_eagerly=True)


# Tolerance for "size ranks of batch B equal one process of batch size*B":
# the two runs sum the same float32 products in a different order (per-rank
# means, then their average, against one mean), a few units in the last place
# of each gradient (~1e-7 relative); 6 SGD steps at lr 0.05 on weights ~0.5
# keep that far below 1e-5. A missing, doubled or unaveraged reduction, or a
# shard mix-up, moves weights by ~lr * |grad| ~ 1e-2 at the first step.
EQUIVALENCE_TOLERANCE = 1e-5


@check()
def fit_equals_one_process_of_size_times_batch():
    size, r, batch, steps = hvd.size(), hvd.rank(), 4, 6
    rs = np.random.RandomState(0)
    x = rs.randn(size * batch * steps, 3).astype("float32")
    y = (np.sin(x).sum(axis=1, keepdims=True) + x[:, :1] ** 2).astype("float32")
    # Rank r's part of global batch i: rows [i*size*B + r*B, i*size*B + (r+1)*B).
    mine = np.concatenate([np.arange(i * size * batch + r * batch,
                                     i * size * batch + (r + 1) * batch)
                           for i in range(steps)])
    for run_eagerly in (False, True):
        keras.utils.set_random_seed(1)
        reference = small_model()
        initial = [numpy(w) for w in reference.weights]
        reference.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse",
                          run_eagerly=run_eagerly)
        reference.fit(x, y, batch_size=size * batch, epochs=1, shuffle=False, verbose=0)
        keras.utils.set_random_seed(1)
        model = small_model()
        model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05)),
                      loss="mse", run_eagerly=run_eagerly)
        model.fit(x[mine], y[mine], batch_size=batch, epochs=1, shuffle=False, verbose=0)
        worst = max(float(np.max(np.abs(numpy(a) - numpy(b))))
                    for a, b in zip(model.weights, reference.weights))
        moved = max(float(np.max(np.abs(numpy(a) - b)))
                    for a, b in zip(reference.weights, initial))
        if worst > EQUIVALENCE_TOLERANCE or moved < 100 * EQUIVALENCE_TOLERANCE:
            raise AssertionError("run_eagerly=%s: %d ranks x %d differ from 1 x %d by %g "
                                 "(training moved weights by %g)"
                                 % (run_eagerly, size, batch, size * batch, worst, moved))
        expect_same_on_every_rank(model.weights, "weights (run_eagerly=%s)" % run_eagerly)
        if r == 0:
            print("equivalence %s run_eagerly=%s: %d x %d vs 1 x %d: largest difference %g, "
                  "training moved weights by %g" % (BACKEND, run_eagerly, size, batch,
                                                    size * batch, worst, moved), flush=True)


@check()
def compile_accepts_experimental_run_tf_function():
    model = small_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse",
                  experimental_run_tf_function=False)
    model.fit(*rank_data(8), batch_size=8, epochs=1, verbose=0)


@check()
def jit_compile_auto_means_false_with_a_distributed_optimizer():
    for distributed in (True, False):
        model = small_model()
        # What Keras's "auto" resolves to where a GPU is visible.
        model._resolve_auto_jit_compile = lambda: True
        opt = keras.optimizers.SGD(0.1)
        model.compile(optimizer=hvd.DistributedOptimizer(opt) if distributed else opt,
                      loss="mse")
        if model.jit_compile == distributed:
            raise AssertionError("distributed=%s: jit_compile %r after \"auto\""
                                 % (distributed, model.jit_compile))
    for jit in (True,):
        model = small_model()
        try:
            model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)),
                          loss="mse", jit_compile=jit)
        except hvd.TandemError as exc:
            if "jit_compile=False" not in str(exc):
                raise AssertionError("message: %s" % exc)
        else:
            raise AssertionError("jit_compile=True was accepted with a DistributedOptimizer")


@check()
def mixed_precision_skips_or_applies_on_every_rank_together():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        for users_order in (False, True):
            keras.utils.set_random_seed(4)
            model = small_model()
            opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.01))
            if users_order:  # the order that would check each rank's own gradients
                opt = keras.optimizers.LossScaleOptimizer(opt)
            model.compile(optimizer=opt, loss="mse")
            opt = model.optimizer
            if not isinstance(opt, keras.optimizers.LossScaleOptimizer) or \
                    not hasattr(opt, "_tandem") or hasattr(opt.inner_optimizer, "_tandem"):
                raise AssertionError("optimizer %s around %s" % (
                    type(opt).__mro__[:3], type(getattr(opt, "inner_optimizer", None))))
            x, y = rank_data(32)
            if hvd.rank() == hvd.size() - 1:
                x[8:16] = np.inf  # this rank's second step has non-finite gradients
            before = float(opt.initial_scale)  # dynamic_scale exists once built
            model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
            # Every rank skipped the second step (halving its loss scale; fp16
            # overflow may halve it more), all alike: no rank was left waiting.
            if float(numpy(opt.dynamic_scale)) > before / 2:
                raise AssertionError("loss scale %s, started at %s: no step was skipped"
                                     % (numpy(opt.dynamic_scale), before))
            expect_same_on_every_rank(
                [opt.dynamic_scale, opt.step_counter] + model.weights,
                "users_order=%s: loss scale, its counter and the weights" % users_order)
            if not all(np.all(np.isfinite(numpy(w))) for w in model.weights):
                raise AssertionError("non-finite weights")
    finally:
        keras.mixed_precision.set_global_policy("float32")


@check(backends=("tensorflow",))
def tensorflow_keras_is_the_same_api():
    import horovod.tensorflow.keras as tf_hvd
    import tandem.keras
    for name in tandem.keras.__all__:
        if getattr(tf_hvd, name) is not getattr(hvd, name) and name != "callbacks":
            raise AssertionError("horovod.tensorflow.keras.%s differs from horovod.keras's"
                                 % name)
    for name in ("BroadcastGlobalVariablesCallback", "MetricAverageCallback",
                 "LearningRateWarmupCallback", "LearningRateScheduleCallback",
                 "BestModelCheckpoint"):
        if getattr(tf_hvd.callbacks, name) is not getattr(hvd.callbacks, name):
            raise AssertionError("callbacks.%s differs" % name)


# ------------------------------------------------------------------ callbacks

@check()
def broadcast_callback_makes_weights_and_optimizer_state_equal():
    r, size = hvd.rank(), hvd.size()
    root = size - 1
    model = small_model(seed_value=float(r))
    # Learning rate 0: Adam leaves the weights alone, its moments still move.
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(learning_rate=0.0))
    model.compile(optimizer=opt, loss="mse")
    opt.build(model.trainable_variables)
    for m in opt._momentums + opt._velocities:
        m.assign(np.full(m.shape, r + 1.0))
    local = model.layers[0].bias
    model.fit(*rank_data(16), batch_size=8, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(
                  root, local_variables=[local])])
    expect_equal(model.layers[0].kernel, np.full((3, 4), float(root)), "kernel")
    expect_equal(model.layers[1].kernel, np.full((4, 1), float(root)), "second kernel")
    expect_equal(local, np.full((4,), float(r)), "local bias (not broadcast)")
    # The moments started from the root's values (root + 1, not this rank's)
    # and then moved alike: equal everywhere, and the velocity of a weight
    # whose gradient is averaged is rho * (root + 1) + (1 - rho) * g**2 >= ...
    expect_same_on_every_rank(opt.variables, "optimizer variables")
    first_velocity = numpy(opt._velocities[0])
    if np.any(first_velocity < 0.999 ** 2 * (root + 1.0) - 1e-6):
        raise AssertionError("velocity %s does not start from the root's %r"
                             % (first_velocity.ravel()[:3], root + 1.0))


@check()
def broadcast_callback_leaves_random_streams_alone():
    keras.utils.set_random_seed(30 + hvd.rank())
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    model.fit(*rank_data(16), batch_size=8, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    states = [v for v in model.variables if v.name == "seed_generator_state"]
    weights = [v for v in model.variables if v.name != "seed_generator_state"]
    if len(states) != 1:
        raise AssertionError("expected one seed generator state, got %s"
                             % [v.path for v in model.variables])
    expect_same_on_every_rank(weights, "weights")
    mine = numpy(states[0])
    others = [s for k, s in enumerate(everyone(mine)) if k != hvd.rank()]
    if any(np.array_equal(mine, s) for s in others):
        raise AssertionError("the dropout seed state was broadcast: ranks share one stream")


@check()
def broadcast_callback_unbuilt_model_after_first_batch():
    keras.utils.set_random_seed(11 + hvd.rank())
    model = small_model(built=False)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05)), loss="mse")
    cb = hvd.callbacks.BroadcastGlobalVariablesCallback(0)
    model.fit(*rank_data(16), batch_size=8, epochs=1, verbose=0, callbacks=[cb])
    if not cb.broadcast_done:
        raise AssertionError("no broadcast happened")
    expect_same_on_every_rank(model.weights, "weights")


class Recorder(keras.callbacks.Callback):
    """Copies of the logs and the learning rate at each hook it is given."""

    def __init__(self):
        super().__init__()
        self.epochs, self.batches, self.ends = [], [], []
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        opt = self.model.optimizer
        self.batches.append((self.epoch, batch, float(numpy(opt.learning_rate)),
                             [numpy(m).copy() for m in getattr(opt, "momentums", [])]))

    def on_train_batch_end(self, batch, logs=None):
        opt = self.model.optimizer
        self.ends.append([numpy(m).copy() for m in getattr(opt, "momentums", [])])

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(dict(logs or {}))


@check()
def metric_average_gives_the_mean_of_ranks():
    keras.utils.set_random_seed(3)
    model = small_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse",
                  metrics=["mae"])
    raw, averaged = Recorder(), Recorder()
    x, y = rank_data(32)
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0,
                        validation_data=rank_data(16), callbacks=[
                            hvd.callbacks.BroadcastGlobalVariablesCallback(0), raw,
                            hvd.callbacks.MetricAverageCallback(), averaged])
    all_raw = everyone(raw.epochs)
    for epoch, logs in enumerate(averaged.epochs):
        if sorted(logs) != sorted(["loss", "mae", "val_loss", "val_mae"]):
            raise AssertionError("logs hold %s" % sorted(logs))
        for key, value in logs.items():
            want = np.mean([rank_logs[epoch][key] for rank_logs in all_raw])
            if not np.isclose(value, want, rtol=1e-12, atol=0):
                raise AssertionError("epoch %d %s: %r, mean of ranks %r" % (epoch, key, value,
                                                                             want))
            if history.history[key][epoch] != value:
                raise AssertionError("History recorded %r, not the mean %r"
                                     % (history.history[key][epoch], value))
    if hvd.size() > 1 and len({rank_logs[0]["loss"] for rank_logs in all_raw}) < 2:
        raise AssertionError("every rank had the same loss: the check proves nothing")


@check()
def metric_average_different_metrics_raise_on_every_rank():
    from tandem.keras import callbacks as tcb
    logs = {"loss": 1.0, ("extra_%d" % hvd.rank() if hvd.size() > 1 else "x"): 2.0}
    if hvd.size() > 1:
        try:
            tcb.average_logs(logs)
        except hvd.TandemError as exc:
            if "rank 0" not in str(exc) or "different metrics" not in str(exc):
                raise AssertionError("message: %s" % exc)
        else:
            raise AssertionError("different metric names were averaged")
    logs = {"loss": float(hvd.rank()), "acc": 1.0}
    tcb.average_logs(logs)
    expect_equal(np.array(logs["loss"]), np.array((hvd.size() - 1) / 2.0), "loss after")


def lr_fit(callbacks, epochs, steps=4, momentum=0.0):
    model = small_model(seed_value=0.01)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.1, momentum=momentum))
    model.compile(optimizer=opt, loss="mse")
    recorder = Recorder()
    model.fit(*rank_data(8 * steps), batch_size=8, epochs=epochs, verbose=0,
              callbacks=callbacks + [recorder])
    return recorder


@check()
def learning_rate_warmup_per_batch():
    size, steps, warmup, initial = hvd.size(), 4, 2, 0.4
    recorder = lr_fit([hvd.callbacks.LearningRateWarmupCallback(initial, warmup_epochs=warmup)],
                      epochs=3, steps=steps)
    last = None
    for epoch, batch, lr, _ in recorder.batches:
        if epoch < warmup:
            e = epoch + float(batch) / steps + 1.0 / steps
            want = initial / size * (e * (size - 1) / warmup + 1)
            last = want
        else:
            want = last  # warmup over: left where it ended (initial_lr)
        if not np.isclose(lr, want, rtol=1e-6):
            raise AssertionError("epoch %d batch %d: lr %r, expected %r" % (epoch, batch, lr,
                                                                          want))
    if not np.isclose(last, initial, rtol=1e-6):
        raise AssertionError("warmup ended at %r, not initial_lr %r" % (last, initial))
    if not np.isclose(recorder.epochs[0]["lr"], recorder.batches[steps - 1][2]):
        raise AssertionError("logs['lr'] %r" % recorder.epochs[0]["lr"])


@check()
def learning_rate_schedule_staircase_and_function():
    steps, initial = 3, 0.2
    recorder = lr_fit([
        hvd.callbacks.LearningRateScheduleCallback(initial, multiplier=0.5, start_epoch=1,
                                                   end_epoch=3),
        hvd.callbacks.LearningRateScheduleCallback(initial, multiplier=lambda e: e / 10.0,
                                                   start_epoch=3, staircase=False)],
        epochs=5, steps=steps)
    for epoch, batch, lr, _ in recorder.batches:
        if epoch == 0:
            want = 0.1  # before start_epoch: the optimizer's own
        elif epoch < 3:
            want = initial * 0.5 ** (epoch - 1)
        else:
            want = initial * (epoch + float(batch) / steps) / 10.0
        if not np.isclose(lr, want, rtol=1e-6):
            raise AssertionError("epoch %d batch %d: lr %r, expected %r" % (epoch, batch, lr,
                                                                          want))


@check()
def momentum_correction_scales_the_momentum_buffers():
    steps = 4
    for correction in (True, False):
        recorder = lr_fit([hvd.callbacks.LearningRateScheduleCallback(
            0.2, multiplier=lambda e: 1.0 + e, staircase=False,
            momentum_correction=correction)], epochs=1, steps=steps, momentum=0.9)
        for i in range(1, steps):
            _, _, lr_before, _ = recorder.batches[i - 1]
            _, _, lr, buffers = recorder.batches[i]
            ratio = lr / lr_before if correction else 1.0
            for after_step, now in zip(recorder.ends[i - 1], buffers):
                if not np.allclose(now, after_step * ratio, rtol=1e-6):
                    raise AssertionError("correction=%s batch %d: buffer %s, expected %s x %r"
                                         % (correction, i, now.ravel()[:3],
                                            after_step.ravel()[:3], ratio))
        if not any(np.any(b) for b in recorder.ends[0]):
            raise AssertionError("momentum buffers stayed zero: the check proves nothing")


@check()
def best_model_checkpoint():
    keras.utils.set_random_seed(5)
    model = small_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    cb = hvd.callbacks.BestModelCheckpoint(monitor="val_loss")
    if not cb.save_best_only or cb.filepath is not None:
        raise AssertionError("BestModelCheckpoint: save_best_only %s filepath %r"
                             % (cb.save_best_only, cb.filepath))
    try:
        model.fit(*rank_data(8), epochs=1, verbose=0, validation_data=rank_data(8),
                  callbacks=[cb])
    except ValueError as exc:
        if "filepath" not in str(exc):
            raise
    else:
        raise AssertionError("fit without a filepath did not raise")
    with tempfile.TemporaryDirectory() as tmp:
        cb.filepath = os.path.join(tmp, "best.keras")
        history = model.fit(*rank_data(16), batch_size=8, epochs=3, verbose=0,
                            validation_data=rank_data(8), callbacks=[cb])
        if not os.path.exists(cb.filepath):
            raise AssertionError("no checkpoint written")
        if not np.isclose(cb.best, min(history.history["val_loss"])):
            raise AssertionError("best %r, val_loss %r" % (cb.best, history.history["val_loss"]))
        hvd.load_model(cb.filepath)


# ------------------------------------------------------------------ load_model

class TestOptimizer(keras.optimizers.RMSprop):
    """A user's optimizer class (not registered with Keras)."""


def trained_model(opt_factory, path, distributed=True):
    keras.utils.set_random_seed(9)
    model = small_model()
    opt = hvd.DistributedOptimizer(opt_factory()) if distributed else opt_factory()
    # A loss object, not "mse": Keras 3 cannot load a legacy .h5 file whose
    # loss was given by that name (its own limitation).
    model.compile(optimizer=opt, loss=keras.losses.MeanSquaredError())
    model.fit(*rank_data(16), batch_size=8, epochs=1, verbose=0)
    model.save(path)
    return model, opt


def expect_loaded(model, opt, new, class_name, what):
    new_opt = new.optimizer
    if type(new_opt).__name__ != class_name or not hasattr(new_opt, "_tandem"):
        raise AssertionError("%s: optimizer %s (distributed: %s)"
                             % (what, type(new_opt), hasattr(new_opt, "_tandem")))
    if new_opt.get_config() != opt.get_config():
        raise AssertionError("%s: config %s != %s" % (what, new_opt.get_config(),
                                                      opt.get_config()))
    if len(new_opt.variables()) != len(opt.variables()):
        raise AssertionError("%s: %d optimizer variables, saved %d" % (
            what, len(new_opt.variables()), len(opt.variables())))
    for a, b in zip(opt.variables(), new_opt.variables()):
        expect_equal(b, numpy(a), "%s: optimizer variable %s" % (what, a.path))
    for a, b in zip(model.weights, new.weights):
        expect_equal(b, numpy(a), "%s: weight" % what)


@check()
def load_model_round_trip():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model, opt = trained_model(lambda: keras.optimizers.RMSprop(0.001), path)
        new = hvd.load_model(path)
        expect_loaded(model, opt, new, "RMSprop", "hvd.load_model")
        # The loaded optimizer reduces: a step on rank-dependent data leaves
        # every rank with the same weights.
        new.fit(*rank_data(8), batch_size=8, epochs=1, verbose=0)
        expect_same_on_every_rank(new.weights, "weights after a step of the loaded model")
        plain = keras.models.load_model(path)
        if hasattr(plain.optimizer, "_tandem") or type(plain.optimizer).__name__ != "RMSprop":
            raise AssertionError("plain Keras loaded %s" % type(plain.optimizer))
        fp16 = hvd.load_model(path, compression=hvd.Compression.fp16)
        if fp16.optimizer._tandem.compression is not hvd.Compression.fp16:
            raise AssertionError("compression not passed on")
        legacy = os.path.join(tmp, "model.h5")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Keras calls .h5 legacy
            model.save(legacy)
            from_h5 = hvd.load_model(legacy)
        if not hasattr(from_h5.optimizer, "_tandem"):
            raise AssertionError("legacy .h5: optimizer not distributed")


@check()
def load_model_custom_optimizers_and_objects():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model, opt = trained_model(lambda: TestOptimizer(learning_rate=0.001), path)
        new = hvd.load_model(path, custom_optimizers=[TestOptimizer])
        expect_loaded(model, opt, new, "TestOptimizer", "custom_optimizers")
        made = []

        def factory(**kwargs):
            made.append(kwargs)
            return hvd.DistributedOptimizer(TestOptimizer(**kwargs))

        new = hvd.load_model(path, custom_objects={"TestOptimizer": factory})
        expect_loaded(model, opt, new, "TestOptimizer", "custom_objects factory")
        if len(made) != 1:
            raise AssertionError("the factory ran %d times" % len(made))


@check()
def load_model_on_root_then_broadcast():
    """Horovod's pattern: rank 0 resumes from a file, the others build a fresh
    model; BroadcastGlobalVariablesCallback makes them all the root's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        if hvd.rank() == 0:
            trained_model(lambda: keras.optimizers.SGD(0.01, momentum=0.9), path,
                          distributed=False)  # rank 0 alone: no collectives
            model = hvd.load_model(path)
        else:
            keras.utils.set_random_seed(20 + hvd.rank())
            model = small_model()
            model.compile(optimizer=hvd.DistributedOptimizer(
                keras.optimizers.SGD(0.01, momentum=0.9)), loss="mse")
        model.fit(*rank_data(16), batch_size=8, epochs=1, verbose=0,
                  callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
        expect_same_on_every_rank(model.weights, "weights")
        expect_same_on_every_rank(model.optimizer.variables, "optimizer variables")


# ------------------------------------------------------------------ values

# ------------------------------------------------------------------ elastic

@check()
def elastic_state_sync_restore_commit():
    classes = [hvd.elastic.KerasState]
    if BACKEND == "tensorflow":
        import horovod.tensorflow.elastic
        classes.append(horovod.tensorflow.elastic.TensorFlowKerasState)
    for cls in classes:
        keras_checks.elastic_state_sync_restore_commit(keras, cls, numpy)


@check()
def elastic_callbacks_in_fit():
    keras_checks.elastic_callbacks_in_fit(keras, hvd, numpy)


@check()
def value_level_collectives():
    r, size = hvd.rank(), hvd.size()
    got = hvd.allreduce(contribution(r, (2, 3)).astype("float32"))
    expect_equal(got, mean_of_ranks((2, 3)), "allreduce")
    expect_equal(hvd.allreduce(contribution(r, (4,)), op=hvd.Sum), sum_of_ranks((4,)),
                 "allreduce Sum")
    expect_equal(hvd.allreduce(np.arange(4, dtype=np.int32) + r),
                 (np.sum([np.arange(4) + k for k in range(size)], axis=0)) // size,
                 "allreduce of int32 (the mean truncated)")
    gathered = hvd.allgather(np.full((r + 1, 2), r, dtype=np.int64))
    expect_equal(gathered, np.concatenate([np.full((k + 1, 2), k) for k in range(size)]),
                 "allgather")
    expect_equal(hvd.broadcast(np.full((3,), float(r)), root_rank=size - 1),
                 np.full((3,), float(size - 1)), "broadcast")
    rows = np.arange(2 * size * 3, dtype=np.float32).reshape(2 * size, 3) + r
    want = np.mean([np.arange(2 * size * 3).reshape(2 * size, 3) + k for k in range(size)],
                   axis=0)[2 * r:2 * r + 2]
    expect_equal(hvd.reducescatter(rows), want, "reducescatter")
    (v,) = variables([(3,)])
    v.assign(np.full(3, float(r)))
    hvd.broadcast_variables([v], root_rank=0)
    expect_equal(v, np.zeros(3), "broadcast_variables")
    try:
        hvd.broadcast_global_variables(0)
    except hvd.TandemError as exc:
        if "BroadcastGlobalVariablesCallback" not in str(exc):
            raise AssertionError(str(exc))
    else:
        raise AssertionError("broadcast_global_variables did not refuse")


def main():
    return CHECKS.main(hvd.init, lambda fn: BACKEND in fn.backends)


if __name__ == "__main__":
    sys.exit(main())

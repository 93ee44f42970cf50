"""Every tandem.keras2 feature (Horovod's Keras API on Keras 2), run on every
rank, with values checked against what each rank contributed. Run as N ranks
(tandem-run -np N) with a Keras 2 interpreter: TF 2.16+ with tf_keras and
TF_USE_LEGACY_KERAS=1, or TF <= 2.15. Each rank prints "PASS <check> rank R"
or "FAIL ..." per check and exits 1 if any failed; ``--only a,b`` runs a
subset.

Written against ``horovod.tensorflow.keras`` (Horovod's tf.keras module),
as Horovod's own Keras 2 tests are; one check makes sure ``horovod.keras``
is the same API. Contributions are small integers of the rank, so sums and
means are exact in float32 and the checks compare bit for bit; where a check
would pass without communication (one rank) the expected value is one that
differs between ranks when there are several.
"""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd
from tandem._which_keras import keras2

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    import keras_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers import keras_checks

keras = keras2()
CHECKS = keras_checks.Registry()
check = CHECKS.check

# ------------------------------------------------------------------ helpers
# (keras_checks: what each rank contributes, and the comparisons)
contribution, mean_of_ranks, sum_of_ranks = (
    keras_checks.contribution, keras_checks.mean_of_ranks, keras_checks.sum_of_ranks)
expect_equal, everyone, expect_same_on_every_rank = (
    keras_checks.expect_equal, keras_checks.everyone, keras_checks.expect_same_on_every_rank)

SHAPES = [(3, 4), (5,), (), (2, 1, 3)]


def linear_loss(variables, step=0):
    """A loss whose gradient for variable i is this rank's contribution."""
    r = hvd.rank()
    return lambda: tf.add_n([tf.reduce_sum(v * contribution(r, s, step).astype(np.float32))
                             for v, s in zip(variables, SHAPES)])


def zeros(shapes=SHAPES):
    return [tf.Variable(np.zeros(s, np.float32)) for s in shapes]


def small_model():
    model = keras.Sequential([keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                              keras.layers.Dense(1)])
    return model


def rank_data(n=32, rank=None):
    rng = np.random.RandomState(100 + (hvd.rank() if rank is None else rank))
    return rng.rand(n, 3).astype(np.float32), rng.rand(n, 1).astype(np.float32)


def optimizer_families():
    yield "keras.optimizers.SGD", keras.optimizers.SGD
    yield "keras.optimizers.legacy.SGD", keras.optimizers.legacy.SGD


# ------------------------------------------------------------------ optimizer

@check()
def modules_are_keras2():
    import horovod.keras
    import tandem.keras2
    if hvd.DistributedOptimizer is not tandem.keras2.DistributedOptimizer:
        raise AssertionError("horovod.tensorflow.keras is not tandem.keras2")
    for name in hvd.__all__:
        if getattr(horovod.keras, name) is not getattr(hvd, name):
            raise AssertionError("horovod.keras.%s differs from horovod.tensorflow.keras's" % name)
    if not issubclass(hvd.callbacks.MetricAverageCallback, keras.callbacks.Callback):
        raise AssertionError("callbacks are not %s callbacks" % keras.__name__)
    if tf.keras.Model is not keras.Model:
        raise AssertionError("tf.keras is not %s" % keras.__name__)


@check()
def minimize_averages_gradients():
    for what, cls in optimizer_families():
        for compiled in (False, True):
            variables = zeros()
            opt = hvd.DistributedOptimizer(cls(learning_rate=1.0))

            def step():
                opt.minimize(linear_loss(variables), variables)
            (tf.function(step) if compiled else step)()
            for v, s in zip(variables, SHAPES):
                expect_equal(v.numpy(), -mean_of_ranks(s),
                             "%s minimize compiled=%s" % (what, compiled))


@check()
def compute_gradients_paths_reduce():
    # New optimizers: compute_gradients; legacy: _compute_gradients (what
    # Horovod's tests and subclasses call) and the TF1-era get_gradients.
    variables = zeros()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0))
    pairs = opt.compute_gradients(linear_loss(variables), variables, tape=tf.GradientTape())
    for (g, _), s in zip(pairs, SHAPES):
        expect_equal(g.numpy(), mean_of_ranks(s), "compute_gradients")
    legacy = hvd.DistributedOptimizer(keras.optimizers.legacy.SGD(1.0))
    pairs = legacy._compute_gradients(linear_loss(variables), variables)
    for (g, _), s in zip(pairs, SHAPES):
        expect_equal(g.numpy(), mean_of_ranks(s), "_compute_gradients")

    @tf.function
    def graph_gradients():
        return legacy.get_gradients(linear_loss(variables)(), variables)
    for g, s in zip(graph_gradients(), SHAPES):
        expect_equal(g.numpy(), mean_of_ranks(s), "get_gradients")


@check()
def op_sum_predivide_and_fp16():
    variables = zeros()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), op=hvd.Sum)
    opt.minimize(linear_loss(variables), variables)
    for v, s in zip(variables, SHAPES):
        expect_equal(v.numpy(), -sum_of_ranks(s), "op=Sum")
    variables = zeros()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), gradient_predivide_factor=2.0)
    opt.minimize(linear_loss(variables), variables)
    for v, s in zip(variables, SHAPES):
        expect_equal(v.numpy(), -mean_of_ranks(s), "gradient_predivide_factor")
    variables = zeros()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), compression=hvd.Compression.fp16)
    opt.minimize(linear_loss(variables), variables)
    for v, s in zip(variables, SHAPES):
        expect_equal(v.numpy(), -mean_of_ranks(s), "fp16 compression")
    # Horovod's refusals (tandem.keras_common.optimizer.check_arguments, as
    # for Keras 3): each a ValueError at the call.
    for bad in (dict(op=hvd.Adasum), dict(op=hvd.Sum, gradient_predivide_factor=2.0),
                dict(gradient_predivide_factor=0.0), dict(backward_passes_per_step=0),
                dict(groups=-1), dict(groups=[1, 2])):
        try:
            hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), **bad)
        except ValueError:
            continue
        raise AssertionError("DistributedOptimizer(%s) was accepted" % bad)


@check()
def backward_passes_per_step_accumulates():
    for average in (False, True):
        for compiled in (False, True):
            variables = zeros()
            opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), backward_passes_per_step=2,
                                           average_aggregated_gradients=average)

            def step(k):
                pairs = opt.compute_gradients(linear_loss(variables, k), variables,
                                              tape=tf.GradientTape())
                opt.apply_gradients(pairs)
            run = tf.function(step) if compiled else step  # a trace per pass number
            what = "average=%s compiled=%s" % (average, compiled)
            run(0)
            expect_equal(variables[0].numpy(), np.zeros((3, 4)), "%s: first pass applies" % what)
            expect_equal(opt._agg_helper.counter.numpy(), 1, "%s: counter" % what)
            run(1)
            for v, s in zip(variables, SHAPES):
                total = mean_of_ranks(s, 0) + mean_of_ranks(s, 1)
                expect_equal(v.numpy(), -(total / 2 if average else total), what)
            expect_equal(opt._agg_helper.counter.numpy(), 0, "%s: counter reset" % what)
            expect_equal(opt.iterations.numpy(), 2, "%s: iterations count every pass" % what)


@check()
def local_variables_and_partial_optimizer():
    variables = zeros()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0))
    opt.register_local_var(variables[1])
    opt.minimize(linear_loss(variables), variables)
    expect_equal(variables[0].numpy(), -mean_of_ranks(SHAPES[0]), "shared variable")
    expect_equal(variables[1].numpy(), -contribution(hvd.rank(), SHAPES[1]) / hvd.size(),
                 "local variable (own gradient / size)")
    model = small_model()
    opt = hvd.PartialDistributedOptimizer(keras.optimizers.SGD(0.1),
                                          local_layers=[model.layers[1]],
                                          scale_local_gradients=False)
    model.compile(optimizer=opt, loss="mse")
    model.set_weights([np.full(w.shape, 0.1, np.float32) for w in model.get_weights()])
    model.fit(*rank_data(8), batch_size=8, epochs=1, verbose=0)
    weights = [w.numpy() for w in model.layers[0].weights]
    expect_same_on_every_rank(weights, "shared layer")
    local = everyone(model.layers[1].get_weights()[0])
    if hvd.size() > 1 and np.array_equal(local[0], local[1]):
        raise AssertionError("the local layer's weights were reduced")


@check()
def partial_gradient_tape_takes_keras2_layers():
    import horovod.tensorflow as hvd_tf
    tf.keras.utils.set_random_seed(3)  # the same model on every rank
    model = small_model()
    x, y = rank_data(8)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    tape = hvd_tf.PartialDistributedGradientTape(tape, local_layers=[model.layers[1]])
    grads = [g.numpy() for g in tape.gradient(loss, model.trainable_variables)]
    expect_same_on_every_rank(grads[:2], "the shared layer's gradients")
    local = everyone(grads[2])
    if hvd.size() > 1 and np.array_equal(local[0], local[1]):
        raise AssertionError("the local layer's gradients were reduced")


@check()
def sparse_gradients():
    for sparse_as_dense in (False, True):
        emb = keras.layers.Embedding(10, 2)
        emb.build((None,))
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0),
                                       sparse_as_dense=sparse_as_dense)
        ids = tf.constant([hvd.rank(), 9])

        def loss():
            return tf.reduce_sum(emb(ids))
        pairs = opt.compute_gradients(loss, emb.trainable_weights, tape=tf.GradientTape())
        grad = tf.convert_to_tensor(pairs[0][0]).numpy()
        want = np.zeros((10, 2))
        for r in range(hvd.size()):
            want[r] += 1.0 / hvd.size()
        want[9] += 1.0
        expect_equal(grad, want, "embedding gradient sparse_as_dense=%s" % sparse_as_dense)


@check(min_size=3)
def process_set():
    subset = hvd.add_process_set([0, 1])
    try:
        variables = zeros()
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), process_set=subset)
        opt.minimize(linear_loss(variables), variables)
        want = (np.mean([contribution(r, SHAPES[0]) for r in (0, 1)], axis=0)
                if hvd.rank() in (0, 1) else contribution(hvd.rank(), SHAPES[0]))
        expect_equal(variables[0].numpy(), -want, "process set [0, 1]")
    finally:
        hvd.remove_process_set(subset)


@check()
def config_round_trip_and_plain_keras_loads():
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.01))
    cfg = opt.get_config()
    if opt.from_config(cfg).get_config() != cfg or \
            type(opt).from_config(cfg).get_config() != cfg:
        raise AssertionError("config round trip differs")
    if type(opt).__name__ != "Adam":
        raise AssertionError("class name %s" % type(opt).__name__)
    plain = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    if type(plain).__name__ != "Adam" or hasattr(plain, "_agg_helper"):
        raise AssertionError("plain Keras deserialized %s" % type(plain))


def fit(opt, run_eagerly, epochs=1, callbacks=(), momentum=None):
    tf.keras.utils.set_random_seed(7 + hvd.rank())
    model = small_model()
    model.compile(optimizer=opt, loss="mse", run_eagerly=run_eagerly,
                  experimental_run_tf_function=False)
    model.fit(*rank_data(), batch_size=8, epochs=epochs, verbose=0,
              callbacks=list(callbacks))
    return model


@check()
def fit_with_broadcast_leaves_every_rank_identical():
    for what, cls in optimizer_families():
        for run_eagerly in (False, True):
            opt = hvd.DistributedOptimizer(cls(0.05, momentum=0.9))
            model = fit(opt, run_eagerly,
                        callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
            label = "%s run_eagerly=%s" % (what, run_eagerly)
            expect_same_on_every_rank(model.get_weights(), label + " weights")
            expect_same_on_every_rank([v.numpy() for v in model.optimizer.variables()],
                                      label + " optimizer variables")


@check(min_size=2)
def broadcast_callback_is_needed_and_leaves_local_variables():
    # Without the callback the ranks' differently seeded models stay apart
    # (the check can fail); a registered local variable is left alone.
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05))
    model = fit(opt, False)
    weights = everyone(model.get_weights()[0])
    if np.array_equal(weights[0], weights[1]):
        raise AssertionError("different initial weights ended equal without a broadcast")
    tf.keras.utils.set_random_seed(7 + hvd.rank())
    model = small_model()
    local = model.layers[1].kernel
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), loss="mse")
    before = local.numpy().copy()
    model.fit(*rank_data(8), batch_size=8, epochs=1, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(
                  0, local_variables=[local])])
    expect_equal(local.numpy(), before, "local variable left alone")
    expect_same_on_every_rank([model.layers[0].kernel.numpy()], "broadcast kernel")


@check()
def metric_average_gives_the_mean_of_ranks():
    seen = {}

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen[epoch] = dict(logs)

    class Fake(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["loss"] = float(hvd.rank() + epoch)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.0))
    fit(opt, False, epochs=2, callbacks=[Fake(), hvd.callbacks.MetricAverageCallback(),
                                         Record()])
    for epoch in (0, 1):
        expect_equal(seen[epoch]["loss"], np.mean([r + epoch for r in range(hvd.size())]),
                     "averaged loss at epoch %d" % epoch)


@check()
def learning_rate_warmup_per_batch():
    rates = []

    class Record(keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            rates.append(float(keras.backend.get_value(self.model.optimizer.lr)))
    for what, cls in optimizer_families():
        del rates[:]
        opt = hvd.DistributedOptimizer(cls(0.0))
        fit(opt, False, epochs=3, callbacks=[
            hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.4, warmup_epochs=2),
            Record()])
        size, steps = hvd.size(), 4
        want = []
        for epoch in range(3):
            for batch in range(steps):
                if epoch < 2:
                    e = epoch + float(batch) / steps + 1.0 / steps
                    want.append(0.4 / size * (e * (size - 1) / 2 + 1))
                else:
                    want.append(want[-1])
        expect_equal(np.array(rates), np.array(want), what, rtol=1e-6)


@check()
def learning_rate_schedule_staircase():
    rates = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            rates.append(float(logs["lr"]))
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.0))
    fit(opt, False, epochs=3, callbacks=[
        hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.5, multiplier=0.1,
                                                   start_epoch=1), Record()])
    expect_equal(np.array(rates), np.array([0.0, 0.5, 0.05]), "staircase", rtol=1e-6)


@check()
def momentum_correction():
    # Legacy optimizers: momentum (a variable) set to m * new / old for one
    # batch, then restored, as Horovod. New SGD: the buffers scaled.
    seen = []

    class Record(keras.callbacks.Callback):
        def on_batch_begin(self, batch, logs=None):
            seen.append(float(keras.backend.get_value(self.model.optimizer.momentum)))

        def on_batch_end(self, batch, logs=None):
            seen.append(float(keras.backend.get_value(self.model.optimizer.momentum)))
    opt = hvd.DistributedOptimizer(keras.optimizers.legacy.SGD(0.1, momentum=0.5))
    fit(opt, False, callbacks=[hvd.callbacks.LearningRateScheduleCallback(
        initial_lr=0.2, multiplier=1.0), Record()])
    expect_equal(np.array(seen[:2]), np.array([1.0, 0.5]), "legacy momentum during/after",
                 rtol=1e-6)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1, momentum=0.5))
    model = fit(opt, False)
    before = [m.numpy().copy() for m in model.optimizer.momentums]
    callback = hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.3, multiplier=1.0)
    callback.set_model(model)
    callback.on_epoch_begin(0)
    callback.on_batch_begin(0)
    for b, m in zip(before, model.optimizer.momentums):
        expect_equal(m.numpy(), b * 3.0, "new SGD momentum buffer", rtol=1e-6)


@check()
def load_model_restores_a_distributed_optimizer():
    tmp = everyone(tempfile.mkdtemp() if hvd.rank() == 0 else None)[0]
    for ext in (".h5", ".keras"):
        for what, cls in optimizer_families():
            path = os.path.join(tmp, "model-%s%s" % (what.split(".")[-2], ext))
            model = fit(hvd.DistributedOptimizer(cls(0.05, momentum=0.9)), False,
                        callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
            if hvd.rank() == 0:
                model.save(path)
            everyone(None)  # saved before anyone loads
            label = "%s %s" % (what, ext)
            plain = keras.models.load_model(path)
            if hasattr(plain.optimizer, "_agg_helper"):
                raise AssertionError(label + ": plain Keras loaded a distributed optimizer")
            # Keras 2 keeps a legacy optimizer's state in .h5 only (it loads
            # a .keras file's legacy optimizer fresh, with or without Tandem).
            restored = 0 if ("legacy" in what and ext == ".keras") else 4
            expect_equal(plain.optimizer.iterations.numpy(), restored,
                         label + " iterations plain Keras restores")
            loaded = hvd.load_model(path, legacy_opts="legacy" in what)
            if not hasattr(loaded.optimizer, "_agg_helper"):
                raise AssertionError("%s: optimizer %s is not distributed"
                                     % (label, type(loaded.optimizer)))
            expect_equal(loaded.optimizer.iterations.numpy(), restored,
                         label + " iterations restored")
            loaded.fit(*rank_data(8), batch_size=8, epochs=1, verbose=0)
            expect_same_on_every_rank(loaded.get_weights(), label + " weights after a step")
            everyone(None)


# ------------------------------------------------------------------ elastic

@check()
def elastic_state_sync_restore_commit():
    import horovod.keras
    import horovod.tensorflow.elastic
    if horovod.keras.elastic.KerasState is not hvd.elastic.KerasState:
        raise AssertionError("horovod.keras.elastic is not horovod.tensorflow.keras.elastic")
    if not issubclass(hvd.elastic.KerasState, horovod.tensorflow.elastic.TensorFlowKerasState):
        raise AssertionError("KerasState is not a TensorFlowKerasState, as in Horovod")
    for cls in (hvd.elastic.KerasState, horovod.tensorflow.elastic.TensorFlowKerasState):
        keras_checks.elastic_state_sync_restore_commit(keras, cls)


@check()
def elastic_callbacks_in_fit():
    keras_checks.elastic_callbacks_in_fit(keras, hvd)


@check()
def value_level_collectives():
    r, size = hvd.rank(), hvd.size()
    expect_equal(hvd.allreduce(contribution(r, (2, 3)).astype("float32")).numpy(),
                 mean_of_ranks((2, 3)), "allreduce")
    expect_equal(hvd.allreduce(contribution(r, (4,)), op=hvd.Sum).numpy(), sum_of_ranks((4,)),
                 "allreduce Sum")
    expect_equal(hvd.allgather(np.full((r + 1, 2), r, dtype=np.int64)).numpy(),
                 np.concatenate([np.full((k + 1, 2), k) for k in range(size)]), "allgather")
    expect_equal(hvd.broadcast(np.full((3,), float(r)), root_rank=size - 1).numpy(),
                 np.full((3,), float(size - 1)), "broadcast")
    rows = np.arange(2 * size * 3, dtype=np.float32).reshape(2 * size, 3) + r
    want = np.mean([np.arange(2 * size * 3).reshape(2 * size, 3) + k for k in range(size)],
                   axis=0)[2 * r:2 * r + 2]
    expect_equal(hvd.reducescatter(rows).numpy(), want, "reducescatter")
    try:
        hvd.broadcast_global_variables(0)
    except RuntimeError:
        pass
    else:
        raise AssertionError("broadcast_global_variables did not refuse eagerly")


def main():
    return CHECKS.main(hvd.init)


if __name__ == "__main__":
    sys.exit(main())

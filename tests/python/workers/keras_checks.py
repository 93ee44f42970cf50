"""What the Keras 3 harness (check_keras.py, tandem.keras) and the Keras 2 one
(check_keras2.py, tandem.keras2) share: the check registry and main, what
each rank contributes and the comparisons against it, and the checks
written once for both Keras (Horovod's elastic Keras API).

Framework-free itself (the core and numpy): the Keras module, the Horovod
module and how a value becomes numpy are the harness's, given as
arguments. Contributions are small integers of the rank, so sums and means
are exact in float32 and the checks compare bit for bit; where a check
would pass without communication (one rank) the expected value is one that
differs between ranks when there are several.
"""

import argparse

import numpy as np

import tandem
from tandem import _objects

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks


class Registry(list):
    """The checks of one harness, in order; ``@registry.check(min_size=2,
    **tags)`` adds one (tags: e.g. the Keras backends it runs under)."""

    def check(self, min_size=1, **tags):
        def register(fn):
            fn.min_size = min_size
            for key, value in tags.items():
                setattr(fn, key, value)
            self.append(fn)
            return fn
        return register

    def main(self, init, applies=lambda fn: True):
        """Runs the checks that apply on this many ranks (``--only a,b``: a
        subset); the exit status of report.run_checks."""
        parser = argparse.ArgumentParser()
        parser.add_argument("--only", default="")
        args = parser.parse_args()
        init()
        wanted = set(filter(None, args.only.split(",")))
        return run_checks([c for c in self if (not wanted or c.__name__ in wanted)
                           and tandem.size() >= c.min_size and applies(c)])


# ------------------------------------------------------------------ contributions

def contribution(rank, shape, step=0):
    """What ``rank`` sends: small, rank-, element- and step-dependent."""
    n = int(np.prod(shape)) if shape else 1
    values = (np.arange(n) % 5) + rank + 1 + step
    return values.reshape(shape).astype(np.float64)


def mean_of_ranks(shape, step=0):
    return np.mean([contribution(r, shape, step) for r in range(tandem.size())], axis=0)


def sum_of_ranks(shape, step=0):
    return np.sum([contribution(r, shape, step) for r in range(tandem.size())], axis=0)


def expect_equal(got, want, what, rtol=0.0, numpy=np.asarray):
    got, want = np.asarray(numpy(got)), np.asarray(want)
    ok = got.shape == want.shape and (np.array_equal(got, want.astype(got.dtype)) if rtol == 0
                                      else np.allclose(got, want, rtol=rtol, atol=rtol))
    if not ok:
        raise AssertionError("%s: got %s %s, expected %s %s" % (
            what, got.shape, got.ravel()[:8].tolist(), want.shape, want.ravel()[:8].tolist()))


_gathers = [0]


def everyone(value):
    """Every rank's ``value`` (any picklable), in rank order."""
    _gathers[0] += 1
    return _objects.allgather_object(value, "keras_checks.gather.%d" % _gathers[0])


def expect_same_on_every_rank(arrays, what, numpy=np.asarray):
    mine = [np.asarray(numpy(a)) for a in arrays]
    for rank, theirs in enumerate(everyone(mine)):
        for index, (a, b) in enumerate(zip(mine, theirs)):
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                raise AssertionError("%s: array %d differs between rank %d and rank %d"
                                     % (what, index, tandem.rank(), rank))


# ------------------------------------------------------------------ elastic
# Horovod's test_elastic_state (test_tensorflow2_keras.py), extended to the
# optimizer's variables and to TensorFlowKerasState, and the three callbacks
# in model.fit. ``keras``: the harness's Keras; ``hvd``: its Horovod Keras
# module; ``numpy``: a variable's value as numpy.

def _optimizer_variables(optimizer):
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def _fill(variables, value, numpy):
    for var in variables:
        current = np.asarray(numpy(var))
        var.assign(np.full(current.shape, value, dtype=current.dtype))


def _expect_filled(variables, value, what, numpy):
    for index, var in enumerate(variables):
        current = np.asarray(numpy(var))
        expect_equal(current, np.full(current.shape, value), "%s %d" % (what, index))


def elastic_state_sync_restore_commit(keras, state_class, numpy=np.asarray):
    """sync() gives every rank rank 0's model, optimizer variables and
    attributes; restore() goes back to the last commit (the sync's, then
    commit()'s)."""
    r = tandem.rank()
    model = keras.Sequential([keras.layers.Dense(2, activation="softmax")])
    model.build((2, 2))
    model.set_weights([np.full((2, 2), r + 1.0, np.float32), np.full(2, r + 1.0, np.float32)])
    other = [np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), np.zeros(2, np.float32)]
    optimizer = keras.optimizers.SGD(learning_rate=0.5, momentum=0.9)
    optimizer.build(model.trainable_variables)  # its variables must exist for the state
    opt_vars = _optimizer_variables(optimizer)
    if len(opt_vars) < 3:  # iterations and a momentum per trainable variable at least
        raise AssertionError("the optimizer has %d variables" % len(opt_vars))
    _fill(opt_vars, r + 1, numpy)

    state = state_class(model, optimizer, batch=20 + r, epoch=10 + r)
    state.sync()
    _expect_filled(model.variables, 1.0, "model variable after sync", numpy)
    _expect_filled(opt_vars, 1, "optimizer variable after sync", numpy)
    if (state.batch, state.epoch) != (20, 10):
        raise AssertionError("after sync: batch %s epoch %s" % (state.batch, state.epoch))

    def change():
        model.set_weights(other)
        _fill(opt_vars, 7, numpy)
        state.batch, state.epoch = 21, 11

    change()
    state.restore()
    _expect_filled(model.variables, 1.0, "model variable after restore", numpy)
    _expect_filled(opt_vars, 1, "optimizer variable after restore", numpy)
    if (state.batch, state.epoch) != (20, 10):
        raise AssertionError("after restore: batch %s epoch %s" % (state.batch, state.epoch))

    change()
    state.commit()
    state.restore()
    for got, want in zip(model.get_weights(), other):
        expect_equal(got, want, "model variable after commit and restore")
    _expect_filled(opt_vars, 7, "optimizer variable after commit and restore", numpy)
    if (state.batch, state.epoch) != (21, 11):
        raise AssertionError("after commit: batch %s epoch %s" % (state.batch, state.epoch))


def elastic_callbacks_in_fit(keras, hvd, numpy=np.asarray):
    """In model.fit (3 steps an epoch, 2 epochs): UpdateBatchStateCallback
    keeps state.batch at the batch and 0 after an epoch, UpdateEpochStateCallback
    counts epochs across fits (as after a reset), CommitStateCallback
    commits every 2 batches and at every epoch end; a restore then gives the
    trained model, the same on every rank."""
    r = tandem.rank()
    rng = np.random.RandomState(100 + r)
    x, y = rng.rand(12, 3).astype(np.float32), rng.rand(12, 1).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1)])
    model.build((None, 3))
    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.1, momentum=0.9))
    model.compile(loss="mse", optimizer=optimizer)
    optimizer.build(model.trainable_variables)
    state = hvd.elastic.KerasState(model, optimizer, batch=0, epoch=0)
    state.sync()
    commits, batches, epochs = [], [], []
    commit = state.commit
    state.commit = lambda: (commits.append((state.epoch, state.batch)), commit())

    class Probe(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            batches.append(state.batch)

        def on_epoch_end(self, epoch, logs=None):
            epochs.append((state.epoch, state.batch))

    callbacks = [hvd.elastic.UpdateEpochStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.CommitStateCallback(state, batches_per_commit=2), Probe()]
    for cb in callbacks[:3]:
        if not isinstance(cb, keras.callbacks.Callback):
            raise AssertionError("%s is not a %s callback" % (type(cb).__name__,
                                                               keras.__name__))
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, callbacks=callbacks)
    if batches != [0, 1, 2, 0, 1, 2]:
        raise AssertionError("state.batch at each batch end: %s" % batches)
    # Each epoch end: the epoch is counted before the batch goes back to 0
    # (UpdateEpochStateCallback comes first in the list).
    if epochs != [(1, 0), (2, 0)]:
        raise AssertionError("(state.epoch, state.batch) at each epoch end: %s" % epochs)
    # Every 2 batches (the count runs on across epochs, as Horovod's) and at
    # each epoch end, after the callbacks before it updated the state.
    if commits != [(0, 1), (1, 0), (1, 0), (1, 2), (2, 0)]:
        raise AssertionError("commits at (epoch, batch): %s" % commits)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=callbacks)
    if state.epoch != 3:
        raise AssertionError("state.epoch %s after a second fit of one epoch" % state.epoch)
    trained = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in trained])
    state.restore()
    for got, want in zip(model.get_weights(), trained):
        expect_equal(got, want, "restore after the epoch end's commit")
    expect_same_on_every_rank(model.get_weights(), "weights after fit")

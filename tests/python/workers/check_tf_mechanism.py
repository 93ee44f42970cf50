"""What tandem.tensorflow's mechanism (tf.numpy_function in graphs, DLPack
eagerly; nothing compiled against TensorFlow) does and refuses, as
docs/tensorflow.md states it. Run as N ranks like check_tf_api.py; the
process splits its CPU into two logical devices first (for the
MirroredStrategy checks), so it needs a process of its own.
"""

import ctypes
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

_cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import horovod.tensorflow as hvd  # noqa: E402
import tandem.errors as te  # noqa: E402
from tandem import _arrays  # noqa: E402
from tandem.tensorflow import _bridge  # noqa: E402

try:
    from report import run_checks
except ImportError:
    from workers.report import run_checks

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def _expect_error(cls, fn, what, contains=()):
    try:
        fn()
    except cls as exc:
        for text in contains:
            assert text in str(exc), "%s: message %r lacks %r" % (what, str(exc)[:600], text)
        return exc
    except Exception as exc:  # noqa: BLE001
        raise AssertionError("%s: raised %s (%s), expected %s" % (
            what, type(exc).__name__, str(exc)[:600], cls.__name__))
    raise AssertionError("%s: no error, expected %s" % (what, cls.__name__))


ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
ctypes.pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def address(tensor):
    """Where a CPU tensor's bytes are (DLTensor.data, the struct's first field)."""
    capsule = tf.experimental.dlpack.to_dlpack(tensor)
    managed = ctypes.pythonapi.PyCapsule_GetPointer(capsule, b"dltensor")
    data = ctypes.c_void_p.from_address(managed).value
    tf.experimental.dlpack.from_dlpack(capsule)  # hand the capsule back
    return data


def _address_op(tensor):
    """In a graph: where the tensor's bytes are when the op runs."""
    return tf.py_function(lambda t: np.int64(address(t)), [tensor], tf.int64)


@check
def no_copy_in_or_out():
    # The engine reads the tensor's own memory and TensorFlow adopts the
    # engine's result, eagerly (DLPack) and in a graph (the op's callback
    # gets eager tensors: DLPack again), in tf.function (one op) and in a
    # TF1 session (a start op and an asynchronous wait op).
    for mode in ("eager", "function", "session"):
        seen = {}

        def start(arrays):
            seen["in"] = arrays[0].ctypes.data
            out = _arrays.empty(arrays[0].shape, arrays[0].dtype)
            out[...] = arrays[0]
            seen["out"] = out.ctypes.data
            return lambda: [out]

        def probe(x):
            return _bridge.call("probe", start, [x], [x.dtype], [x.shape])[0]
        if mode == "session":
            with tf.Graph().as_default():
                x = tf.random.uniform([1 << 20])
                probe_x = probe(x)
                with tf.compat.v1.Session() as session:
                    got = session.run([x, probe_x, _address_op(x), _address_op(probe_x)])
            x_value, y_value, x_address, y_address = got
        else:
            x = tf.random.uniform([1 << 20])
            y = probe(x) if mode == "eager" else tf.function(probe, autograph=False)(x)
            x_value, y_value, x_address, y_address = x.numpy(), y.numpy(), address(x), address(y)
        assert seen["in"] == x_address, mode + ": the input was copied"
        assert seen["out"] == y_address, mode + ": the output was copied"
        assert np.array_equal(x_value, y_value)


@check
def xla_refused_at_trace_time():
    @tf.function(jit_compile=True)  # autograph on, as users write it
    def step(x):
        return hvd.allreduce(x * 2.0)
    exc = _expect_error(hvd.TandemError, lambda: step(tf.ones(3)), "jit_compile",
                        contains=("jit_compile=True", "XLA"))
    assert isinstance(exc, te.UnsupportedError), type(exc).__mro__

    @tf.function(jit_compile=True)
    def tape_step(v):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * v)
        return hvd.DistributedGradientTape(tape).gradient(loss, [v])
    if hvd.size() > 1:  # a world of one reduces nothing, so nothing to refuse
        _expect_error(te.UnsupportedError, lambda: tape_step(tf.Variable([1.0])),
                      "tape under jit_compile", contains=("jit_compile",))
    # The same computation without jit_compile works.
    assert float(tf.function(lambda x: hvd.allreduce(x, op=hvd.Sum))(tf.ones(1))[0]) == \
        hvd.size()


@check
def mirrored_strategy_one_replica_works_several_refused():
    size, rank = hvd.size(), hvd.rank()
    one = tf.distribute.MirroredStrategy(["/cpu:0"])
    out = one.run(lambda: hvd.allreduce(tf.fill([2], float(rank)), op=hvd.Sum))
    assert one.experimental_local_results(out)[0].numpy().tolist() == [sum(range(size))] * 2
    two = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    _expect_error(te.UnsupportedError,
                  lambda: two.run(lambda: hvd.allreduce(tf.ones(2))), "2 replicas eagerly",
                  contains=("2 replicas",))
    step = tf.function(lambda: two.run(lambda: hvd.allreduce(tf.ones(2))))
    _expect_error(te.UnsupportedError, step, "2 replicas in tf.function",
                  contains=("2 replicas",))
    # In cross-replica context (strategy.scope, outside run) calls are single.
    with two.scope():
        assert float(hvd.allreduce(tf.ones(1), op=hvd.Sum)[0]) == size


@check
def saved_model_runs_only_where_it_was_traced():
    # The op's Python callback is not serialized: a SavedModel holding a
    # collective saves and runs in the saving process, and fails with
    # TensorFlow's missing-callback error, naming our node, elsewhere.
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def reduce(self, x):
            return hvd.allreduce(x, op=hvd.Sum)
    module = Module()
    path = os.path.join(tempfile.mkdtemp(), "m")
    tf.saved_model.save(module, path)
    assert tf.saved_model.load(path).reduce(tf.ones(2)).numpy().tolist() == [hvd.size()] * 2
    code = ("import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'; import tensorflow as tf; "
            "tf.saved_model.load(%r).reduce(tf.ones(2))" % path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TANDEM_", "HOROVOD_"))}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode != 0, "a fresh process ran the saved collective"
    assert "TandemAllreduce" in r.stderr and "Could not find callback" in r.stderr, \
        r.stderr[-2000:]


@check
def trace_time_errors_keep_their_class():
    @tf.function  # autograph on: errors through converted code are rebuilt
    def bad_op(x):
        return hvd.allreduce(x, op=42)
    exc = _expect_error(te.InvalidArgumentError, lambda: bad_op(tf.ones(1)), "bad op")
    assert isinstance(exc, hvd.TandemError)

    @tf.function
    def bad_set(x):
        return hvd.allgather(x, process_set=hvd.ProcessSet([0]))  # not registered
    _expect_error(te.InvalidArgumentError, lambda: bad_set(tf.ones(1)), "unregistered set",
                  contains=("add_process_set",))


def main():
    hvd.init()
    return run_checks(CHECKS)


if __name__ == "__main__":
    sys.exit(main())

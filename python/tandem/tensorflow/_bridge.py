"""How a TensorFlow tensor reaches the engine and comes back, with nothing
compiled against TensorFlow.

A collective is a Python function ``run(arrays) -> arrays`` over numpy
arrays (tandem._arrays starts the engine operations and waits for them).
:func:`call` runs it on tensors:

* Inside a graph (``tf.function``, also TF1 graphs) it becomes a
  ``tf.numpy_function`` op (``stateful``). TensorFlow hands the op its
  inputs as numpy arrays over the tensors' own memory and adopts the
  returned 64-byte aligned arrays as the outputs: no copy either way. Inside
  ``tf.function`` stateful ops run in program order (automatic control
  dependencies), so every rank starts its collectives in the order the code
  calls them, one at a time: a thread waiting in one never holds back the
  collective another rank is waiting in.
* Eagerly, the same ``run`` is called right away on DLPack views of the
  tensors, and the results are wrapped as tensors through DLPack: no copy
  either way (an eager ``tf.numpy_function`` would copy both).

What this cannot do, by construction: XLA cannot compile a Python callback,
so a collective traced under ``tf.function(jit_compile=True)`` raises
UnsupportedError at trace time; the op runs on the CPU (device tensors are
copied to host memory and back by TensorFlow, or here when eager); a
SavedModel holding the op cannot run in another process (the callback is
not serialized).
"""

import functools

import numpy as np
import tensorflow as tf

from tandem import _arrays, _names, _ops, errors

try:  # TF's own test for an XLA compilation context (internal, stable since 1.x)
    from tensorflow.python.ops import control_flow_util as _cf_util
except ImportError:  # pragma: no cover - a TensorFlow without it
    _cf_util = None

_BFLOAT16 = tf.bfloat16.as_numpy_dtype


_traceable_classes = {}


def _traceable(exc):
    """``exc`` as an instance of a subclass of its class whose __init__ is
    Exception's. AutoGraph re-raises an error passing through a user's
    converted function as the same class only for such classes (and a few
    builtins); any other class becomes a StagingError, and `except
    hvd.TandemError` would no longer catch a refusal at trace time."""
    cls = type(exc)
    if cls.__init__ is Exception.__init__:
        return exc
    safe = _traceable_classes.get(cls)
    if safe is None:
        safe = type(cls.__name__, (cls,), {"__init__": Exception.__init__,
                                           "__module__": cls.__module__,
                                           "__qualname__": cls.__qualname__})
        _traceable_classes[cls] = safe
    return safe(*exc.args).with_traceback(exc.__traceback__)


def no_autograph(fn):
    """For the public functions: plain Python around ops, which AutoGraph
    must not rewrite when a user's tf.function calls them (that would only
    slow tracing down), and whose errors at trace time keep their class."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.TandemError as exc:
            if tf.executing_eagerly():
                raise
            raise _traceable(exc) from None
    return tf.autograph.experimental.do_not_convert(wrapper)


# ------------------------------------------------------------------- names

def _outermost_graph():
    graph = tf.compat.v1.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None and \
            hasattr(graph.outer_graph, "outer_graph"):
        graph = graph.outer_graph
    return graph


def name_for(name, kind, process_set=0):
    """The engine name of a collective. A given ``name`` is used as it is.

    Unnamed collectives are numbered per process set (tandem._names), so that
    collectives that only the members of a set call do not shift the names
    of the others. Eagerly they are numbered as in every frontend
    (``allreduce.noname.7``, Horovod's eager names). In a graph they are
    named after the function being traced and their order in it:
    ``allreduce.train_step.3``. Every trace of a function restarts the count,
    so ranks that trace a function a different number of times (e.g. uneven
    allgather shapes) still agree on every name."""
    if name is not None:
        return str(name)
    if tf.executing_eagerly():
        return _names.unnamed(kind, process_set)
    graph = _outermost_graph()
    return _names.in_graph(graph, kind, process_set, getattr(graph, "name", ""))


# ------------------------------------------------------------ conversions

class _DLPackView:
    """What numpy's from_dlpack needs from a CPU tensor."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None, **_kwargs):
        return tf.experimental.dlpack.to_dlpack(self.tensor)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def _on_cpu(tensor):
    device = tensor.device or ""
    return device == "" or ":CPU:" in device.upper()


def to_numpy(tensor):
    """A numpy view of an eager CPU tensor (no copy; read-only)."""
    if tensor.dtype == tf.bfloat16:
        # DLPack has no numpy bfloat16: travel as uint16 bits (a bitcast
        # shares the buffer) and view them as ml_dtypes' bfloat16.
        return np.from_dlpack(_DLPackView(tf.bitcast(tensor, tf.uint16))).view(_BFLOAT16)
    return np.from_dlpack(_DLPackView(tensor))


def from_numpy(array, dtype):
    """An eager tensor over ``array``'s memory (no copy when 64-byte aligned,
    which tandem._arrays guarantees for what it allocates)."""
    if array.size and array.ctypes.data % _arrays.ALIGN:
        # TensorFlow's kernels assume Eigen's alignment and abort on less; a
        # view into the middle of a result (a gradient's slice) is copied.
        aligned = _arrays.empty(array.shape, array.dtype)
        aligned[...] = array
        array = aligned
    if dtype == tf.bfloat16:
        bits = tf.experimental.dlpack.from_dlpack(array.view(np.uint16).__dlpack__())
        return tf.bitcast(bits, tf.bfloat16)
    if array.dtype != dtype.as_numpy_dtype:
        array = array.astype(dtype.as_numpy_dtype)
    return tf.experimental.dlpack.from_dlpack(array.__dlpack__())


# --------------------------------------------------------------- checks

_MOVABLE_KINDS = (tf.string, tf.resource, tf.variant)


def check_tensor(tensor, what):
    """The tensor as a dense tf.Tensor; refuses what cannot reach the engine."""
    if isinstance(tensor, tf.IndexedSlices):
        raise _ops.invalid("%s: tf.IndexedSlices are handled by hvd.allreduce and "
                           "hvd.grouped_allreduce (allgather of values and indices) or "
                           "converted with tf.convert_to_tensor; this call takes dense "
                           "tensors" % what)
    if isinstance(tensor, (tf.SparseTensor, tf.RaggedTensor)):
        raise _ops.invalid("%s: %s is not supported; convert it to a dense tensor first"
                           % (what, type(tensor).__name__))
    try:
        tensor = tf.convert_to_tensor(tensor)
    except (TypeError, ValueError) as exc:
        raise _ops.invalid("%s expects a tf.Tensor (or something convertible), got %s: %s"
                           % (what, type(tensor).__name__, exc)) from None
    if tensor.dtype in _MOVABLE_KINDS or tensor.dtype.is_quantized:
        raise _ops.invalid("%s: tensors of type %s cannot be sent; supported are the "
                           "numeric types and bool" % (what, tensor.dtype.name))
    return tensor


def _refuse_xla(what):
    if _cf_util is None:
        return
    if _cf_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
        raise errors.make(
            "TANDEM_ERR_UNSUPPORTED",
            "%s inside tf.function(jit_compile=True): XLA cannot compile Tandem's collectives "
            "(they call the engine from Python through tf.numpy_function; nothing is compiled "
            "against TensorFlow). Compute in a jit-compiled function and run the collective "
            "in a tf.function without jit_compile (Keras: model.compile(jit_compile=False))"
            % what)


def _refuse_local_replicas(what):
    """tf.distribute with several replicas in this process (MirroredStrategy
    over local devices) would call each collective once per replica: each
    call would pair with the same replica of the other processes (or,
    eagerly, with whichever replica's call drew the same name), reducing
    across processes but never across the replicas. Refused."""
    if not tf.distribute.has_strategy() or tf.distribute.in_cross_replica_context():
        return  # the default strategy (one replica) or outside strategy.run
    strategy = tf.distribute.get_strategy()
    try:
        devices = tuple(strategy.extended.worker_devices)
    except (AttributeError, RuntimeError, NotImplementedError):
        return
    if len(devices) > 1:
        raise errors.make(
            "TANDEM_ERR_UNSUPPORTED",
            "%s inside %s.run with %d replicas in this process (%s): Tandem reduces across "
            "processes, one replica each; start one process per device instead (srun "
            "--horovod=on with one task per device) and drop the strategy"
            % (what, type(strategy).__name__, len(devices), ", ".join(devices)))


# ----------------------------------------------------------------- running

def call(what, run, inputs, out_dtypes, out_shapes):
    """Runs ``run(list of numpy arrays) -> list of numpy arrays`` on the
    tensors ``inputs``; returns one tensor per entry of ``out_dtypes``
    (TensorFlow dtypes), with the static shapes ``out_shapes`` (graphs only;
    None entries for unknown dimensions)."""
    _refuse_local_replicas(what)
    if tf.executing_eagerly():
        return _call_eagerly(run, inputs, out_dtypes)
    _refuse_xla(what)

    def body(*arrays):
        results = run(list(arrays))
        return [np.asarray(r, dtype=d.as_numpy_dtype) if r.dtype != d.as_numpy_dtype else r
                for r, d in zip(results, out_dtypes)]
    scope = "Tandem" + "".join(part[:1].upper() + part[1:] for part in what.split("_"))
    with tf.name_scope(scope):
        outs = tf.numpy_function(body, list(inputs), list(out_dtypes), stateful=True)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    for out, shape in zip(outs, out_shapes):
        if shape is not None:
            out.set_shape(shape)
    return outs


def _contiguous(array):
    array = np.asarray(array)
    # (np.ascontiguousarray would turn a 0-dim array into shape [1])
    return array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)


def _call_eagerly(run, inputs, out_dtypes):
    devices = []
    arrays = []
    for tensor in inputs:
        devices.append(None if _on_cpu(tensor) else tensor.device)
        if devices[-1] is not None:
            # Device memory goes through the host: the engine's GPU path
            # needs TensorFlow's stream, which Python cannot reach.
            with tf.device("/cpu:0"):
                tensor = tf.identity(tensor)
        arrays.append(to_numpy(tensor))
    results = run(arrays)
    outs = [from_numpy(_contiguous(r), d) for r, d in zip(results, out_dtypes)]
    device = next((d for d in devices if d is not None), None)
    if device is not None:
        with tf.device(device):
            outs = [tf.identity(o) for o in outs]
    return outs

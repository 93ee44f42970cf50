"""How a TensorFlow tensor reaches the engine and comes back, with nothing
compiled against TensorFlow.

A collective is ``start(arrays) -> finish`` over numpy arrays
(tandem._arrays enqueues the engine operations; ``finish()`` waits for them
and returns the output arrays). :func:`call` runs it on tensors:

* Eagerly, at once, on DLPack views of the tensors; the results become
  tensors through DLPack: no copy either way (_convert.py).
* In a graph, as TensorFlow ops calling back into Python (_graph_ops.py):
  one op inside tf.function, whose stateful ops run in program order; a
  start op and an asynchronous wait op in graphs whose ops run in any order
  (TF1 sessions), so that no inter-op thread waits for another rank.

Engine errors carry Horovod's TensorFlow exception types, eagerly and in
graphs (_errors.py). This module also names collectives and refuses what
cannot run: XLA cannot compile a Python callback, so a collective traced
under ``tf.function(jit_compile=True)`` raises UnsupportedError at trace
time; several tf.distribute replicas in one process are refused. The op
runs on the CPU (device tensors are copied to host memory and back by
TensorFlow, or here when eager); a SavedModel holding the op cannot run in
another process (the callback is not serialized).
"""

import functools

import tensorflow as tf

from tandem import _names, _ops, errors
from tandem.tensorflow import _convert, _errors, _graph_ops

try:  # TF's own test for an XLA compilation context (internal, stable since 1.x)
    from tensorflow.python.ops import control_flow_util as _cf_util
except ImportError:  # pragma: no cover - a TensorFlow without it
    _cf_util = None

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
                raise _errors.eager(exc) from None
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

def call(what, start, inputs, out_dtypes, out_shapes):
    """Runs a collective on the tensors ``inputs``: ``start(list of numpy
    arrays) -> finish`` enqueues the engine operations, ``finish() -> list
    of numpy arrays`` waits for them. Returns one tensor per entry of
    ``out_dtypes`` (TensorFlow dtypes), with the static shapes ``out_shapes``
    (graphs only; None entries for unknown dimensions). Eagerly it runs at
    once; in a graph it is an op (_graph_ops.py: one op in tf.function, a
    start and an asynchronous wait op where TensorFlow runs ops in any
    order)."""
    _refuse_local_replicas(what)
    if tf.executing_eagerly():
        return _call_eagerly(start, inputs, out_dtypes)
    _refuse_xla(what)
    scope = "Tandem" + "".join(part[:1].upper() + part[1:] for part in what.split("_"))
    with tf.name_scope(scope):
        if getattr(tf.compat.v1.get_default_graph(), "_add_control_dependencies", False):
            outs = _graph_ops.synchronous(start, inputs, out_dtypes)
        else:
            outs = _graph_ops.asynchronous(start, inputs, out_dtypes, what)
    for out, shape in zip(outs, out_shapes):
        if shape is not None:
            out.set_shape(shape)
    return outs


def _call_eagerly(start, inputs, out_dtypes):
    devices = []
    arrays = []
    for tensor in inputs:
        devices.append(None if _convert.on_cpu(tensor) else tensor.device)
        if devices[-1] is not None:
            # Device memory goes through the host: the engine's GPU path
            # needs TensorFlow's stream, which Python cannot reach.
            with tf.device("/cpu:0"):
                tensor = tf.identity(tensor)
        arrays.append(_convert.to_numpy(tensor))
    try:
        results = start(arrays)()
    except errors.TandemError as exc:
        raise _errors.eager(exc) from None
    outs = [_convert.from_numpy(r, d) for r, d in zip(results, out_dtypes)]
    device = next((d for d in devices if d is not None), None)
    if device is not None:
        with tf.device(device):
            outs = [tf.identity(o) for o in outs]
    return outs

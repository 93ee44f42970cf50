"""The TensorFlow ops of Tandem's collectives in graphs, built from Python
callbacks with nothing compiled against TensorFlow.

A collective is ``start(arrays) -> finish``: ``start`` enqueues the engine
operations (it never waits for another rank) and ``finish()`` waits for them
and returns the output arrays. TensorFlow runs a graph's ops in one of two
ways, and each gets its own form of op:

* **In tf.function** (graphs with automatic control dependencies) stateful
  ops run in program order. One op starts and finishes the collective
  (:func:`synchronous`): every rank starts its collectives in the order its
  code calls them, one at a time, so a thread waiting in one never holds
  back a collective another rank waits in, whatever the size of the
  inter-op pool.
* **In graphs without them** (a TF1 graph run by a Session,
  ``tf.compat.v1.wrap_function``) TensorFlow runs independent ops in any
  order, each on an inter-op thread until it returns. A collective that
  waited there for its peers would hold the thread: with more independent
  collectives than threads, rank 0 waiting in A and B while rank 1 waits in
  C and D never ends (Horovod's kernels are AsyncOpKernels for this reason).
  :func:`asynchronous` makes two ops: *start*, which enqueues the engine
  operations and hands ``finish`` to the node's queue in Python, and *wait*,
  an ``IteratorGetNext`` on a dataset iterator made once for the node,
  whose map function takes the node's newest ``finish`` and runs it.
  IteratorGetNext is an asynchronous kernel: tf.data runs it on a thread of
  its own and the inter-op thread goes back to the pool. So every start op
  runs, and collectives complete in any order with any pool size.

Both callbacks are EagerPyFunc ops (tf.py_function's kernel): the inputs
arrive as eager tensors whose memory numpy views through DLPack, and the
outputs leave the same way, adopted without a copy (_convert.py). Engine
errors become the op's status with Horovod's TensorFlow code (_errors.py).
"""

import itertools
import threading
import weakref

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.ops import gen_script_ops, script_ops

from tandem import errors
from tandem.tensorflow import _convert, _errors


class _Callback(script_ops.EagerFunc):
    """A Python function of numpy arrays run by an EagerPyFunc op. It is an
    EagerFunc only so that TensorFlow's callback registry calls it with the
    op's eager tensors and takes its return value as it is (EagerFunc's own
    __init__ and conversions are not used: an engine error returns an object
    that is not a tensor, on purpose; see _errors.in_graph)."""

    def __init__(self, fn, out_dtypes):  # EagerFunc.__init__ is not called: see above
        self._fn = fn
        self._out_dtypes = list(out_dtypes)

    def __call__(self, device, token, args):
        with context.eager_mode():
            try:
                results = self._fn([_convert.to_numpy(t) for t in args])
            except errors.TandemError as exc:
                value, raised = _errors.in_graph(exc)
                if raised is not None:
                    raise raised from None
                return [value]
            return [_convert.from_numpy(r, d) for r, d in zip(results, self._out_dtypes)]


def _outermost(graph):
    while True:
        outer = getattr(graph, "outer_graph", None) or getattr(graph, "_outer_graph", None)
        if outer is None or outer is graph:
            return graph
        graph = outer


def _py_op(fn, inputs, out_dtypes, name=None):
    """An EagerPyFunc op running ``fn(arrays) -> arrays``, kept alive with
    the outermost graph as tf.py_function keeps its own."""
    callback = _Callback(fn, out_dtypes)
    token = script_ops._py_funcs.insert(callback)
    graph = _outermost(tf.compat.v1.get_default_graph())
    if not hasattr(graph, "_py_funcs_used_in_graph"):
        graph._py_funcs_used_in_graph = []
    graph._py_funcs_used_in_graph.append(callback)
    return gen_script_ops.eager_py_func(input=list(inputs), token=token,
                                        Tout=list(out_dtypes), name=name)


def synchronous(start, inputs, out_dtypes):
    """One op: starts the collective and waits for it."""
    return list(_py_op(lambda arrays: start(arrays)(), inputs, out_dtypes))


class _Node:
    """One asynchronous collective op of a graph: what its start op began,
    newest last, for its wait op, and how many runs started.

    In one Session.run the start op runs before the wait op (a control
    dependency), so the newest is that run's; older ones are left from runs
    that failed between the two ops: they are completed (every engine
    operation ends) and dropped."""

    _keys = itertools.count()

    def __init__(self, what):
        self.what = what
        self.key = next(self._keys)
        self.runs = 0
        self._lock = threading.Lock()
        self._finishes = []

    def begin(self, finish):
        """Records this run's ``finish``; returns the run's number."""
        with self._lock:
            self.runs += 1
            self._finishes.append(finish)
            return self.runs

    def take(self):
        with self._lock:
            finishes, self._finishes = self._finishes, []
        if not finishes:
            raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                              "%s: the op ran in two Session.run calls at once, or its wait "
                              "ran without its start; run a graph's collectives from one "
                              "thread at a time" % self.what)
        for stale in finishes[:-1]:
            try:
                stale()
            except errors.TandemError:
                pass
        return finishes[-1]


def _dataset_options():
    options = tf.data.Options()
    # One element per GetNext, computed when asked for: no prefetching
    # (which would take a later run's operation) and no rewriting.
    options.autotune.enabled = False
    options.experimental_optimization.apply_default_optimizations = False
    if hasattr(options.experimental_optimization, "inject_prefetch"):
        options.experimental_optimization.inject_prefetch = False
    return options


class _Graph:
    """What the asynchronous ops of one graph share.

    TensorFlow cancels a dataset iterator for good when the step it serves
    is cancelled while it waits (a failed op anywhere in the Session.run), so
    every op's iterator is made anew in the run after a run that did not
    deliver every started op's outputs, and in the first run of a session.
    ``delivered`` (a table in the session: a new session starts empty)
    holds the last run each op delivered; ``fresh``, one op per graph that
    every start op waits for, compares it with the runs each op started
    before this run's ops start."""

    def __init__(self, graph):
        self.nodes = {}
        with tf.control_dependencies(None), graph.name_scope(None):
            self.delivered = tf.lookup.experimental.MutableHashTable(
                tf.int64, tf.int64, default_value=-1, name="TandemDelivered")
            keys, values = self.delivered.export()
            self.fresh = _py_op(self._fresh, [keys, values], [tf.bool], name="TandemFresh")[0]

    def _fresh(self, arrays):
        delivered = dict(zip(arrays[0].tolist(), arrays[1].tolist()))
        stale = any(node.runs and delivered.get(key, -1) != node.runs
                    for key, node in list(self.nodes.items()))
        return [np.full((), stale, np.bool_)]


_graphs = weakref.WeakKeyDictionary()  # graph -> _Graph


def asynchronous(start, inputs, out_dtypes, what):
    """Two ops, start and wait (module docstring), and the iterator's upkeep;
    returns the outputs."""
    graph = tf.compat.v1.get_default_graph()
    shared = _graphs.get(graph)
    if shared is None:
        shared = _graphs[graph] = _Graph(graph)
    node = _Node(what)
    shared.nodes[node.key] = node

    def start_op(arrays):
        *values, stale = arrays
        first = node.runs == 0
        run = node.begin(start(values))
        return [np.full((), run, np.int64), np.full((), bool(stale) or first, np.bool_)]

    @tf.autograph.experimental.do_not_convert
    def wait_op(index):
        return tuple(_py_op(lambda _: node.take()(), [index], out_dtypes))

    run, fresh = _py_op(start_op, list(inputs) + [shared.fresh], [tf.int64, tf.bool])
    iterator = tf.compat.v1.data.Iterator.from_structure(
        tuple(out_dtypes), tuple(tf.TensorShape(None) for _ in out_dtypes))

    def make_iterator():
        elements = tf.data.Dataset.range(np.iinfo(np.int64).max).map(wait_op)
        with tf.control_dependencies([iterator.make_initializer(
                elements.with_options(_dataset_options()))]):
            return tf.identity(run)

    ready = tf.cond(fresh, make_iterator, lambda: tf.identity(run))
    with tf.control_dependencies([ready]):
        outs = list(iterator.get_next())
    with tf.control_dependencies(outs):
        delivered = shared.delivered.insert(tf.constant(node.key, tf.int64), run)
    with tf.control_dependencies([delivered]):
        return [tf.identity(o) for o in outs]

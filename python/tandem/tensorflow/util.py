"""The helpers of Horovod's ``horovod.tensorflow.util`` that its tests and
some users' code reach (``hvd._executing_eagerly()`` and friends)."""

import tensorflow as tf


def _executing_eagerly():
    """Whether this thread runs TensorFlow eagerly (not tracing a graph)."""
    return tf.executing_eagerly()


def _make_subgraph(f):
    """``f`` as a tf.function."""
    return tf.function(f)


def _cache(f):
    """``f`` memoized on its (hashable) arguments, separately for eager and
    graph calls."""
    results = {}

    def wrapper(*args):
        key = (args, _executing_eagerly())
        if key not in results:
            results[key] = f(*args)
        return results[key]
    return wrapper


def vars_to_refs(variables):
    """Hashable references of a variable or a (nested) list of them."""
    if isinstance(variables, list):
        return tuple(vars_to_refs(v) for v in variables)
    return variables.ref()


def refs_to_vars(refs):
    """The variables back from :func:`vars_to_refs`."""
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()

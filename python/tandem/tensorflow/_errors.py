"""Horovod's TensorFlow exception types for the engine's errors.

Horovod's TF kernels fail with a status that TensorFlow raises as its own
class: ranks that disagree (shape, type, root, op: Horovod's
PRECONDITION_ERROR) as ``tf.errors.FailedPreconditionError``, a bad argument
(alltoall splits, an unknown process set) as ``tf.errors.InvalidArgumentError``,
a shut-down or aborted engine as ``tf.errors.AbortedError``; its tests and
users' scripts catch those. The engine's classes (tandem.errors) stay what
they are for every other frontend, so here each is paired with TensorFlow's:

| engine result | TensorFlow class |
|---|---|
| MISMATCH | FailedPreconditionError |
| INVALID_ARGUMENT, DUPLICATE_NAME | InvalidArgumentError |
| ABORTED | AbortedError |
| UNSUPPORTED | UnimplementedError |
| anything else | UnknownError |

* Eagerly the error raised is of a class made from both: ``except
  tf.errors.FailedPreconditionError``, ``except hvd.HorovodInternalError``
  (horovod.common.exceptions) and ``except tandem.errors.MismatchError`` all
  catch a mismatch.
* In a graph the op's status carries the code. A Python callback can set
  only a few codes by itself (ValueError -> InvalidArgument,
  NotImplementedError -> Unimplemented, anything else -> Unknown, so
  ABORTED is UnknownError there); FailedPrecondition comes from
  TensorFlow's own check that an EagerPyFunc callback returns tensors: an
  object of a class named after the error is returned instead, and
  TensorFlow fails the op with ``FailedPreconditionError: Expected
  EagerTensor, found PyObject of type: MismatchError: <the engine's
  message>``. Either way the message carries the engine's class and text.
"""

import tensorflow as tf

from tandem import errors

TABLE = {
    "TANDEM_ERR_MISMATCH": tf.errors.FailedPreconditionError,
    "TANDEM_ERR_INVALID_ARGUMENT": tf.errors.InvalidArgumentError,
    "TANDEM_ERR_DUPLICATE_NAME": tf.errors.InvalidArgumentError,
    "TANDEM_ERR_ABORTED": tf.errors.AbortedError,
    "TANDEM_ERR_UNSUPPORTED": tf.errors.UnimplementedError,
}

_paired = {}


def _paired_class(engine_class):
    """A subclass of the engine's class and of TensorFlow's for its code."""
    cls = _paired.get(engine_class)
    if cls is None:
        tf_class = TABLE.get(getattr(engine_class, "name", None), tf.errors.UnknownError)

        def __init__(self, message):
            tf_class.__init__(self, None, None, message)
            self.args = (message,)

        cls = type(engine_class.__name__, (engine_class, tf_class), {
            "__init__": __init__, "__module__": engine_class.__module__,
            "__qualname__": engine_class.__qualname__,
            "__str__": lambda self: self.message,
        })
        _paired[engine_class] = cls
    return cls


def eager(exc):
    """The exception to raise eagerly for an engine error: both classes."""
    if isinstance(exc, tf.errors.OpError) or not isinstance(exc, errors.TandemError):
        return exc
    return _paired_class(type(exc))(str(exc)).with_traceback(exc.__traceback__)


class _InGraph(Exception):
    """An error a graph callback turns into its op's status (see in_graph)."""


def in_graph(exc):
    """What a graph callback does with an engine error: the value to return
    in place of its outputs (FailedPrecondition), or the exception to raise
    (its builtin base sets the code: ValueError -> InvalidArgument,
    NotImplementedError -> Unimplemented, else Unknown). The engine's class
    name leads the message either way."""
    name = getattr(exc, "name", None)
    text = "%s: %s" % (type(exc).__name__, exc)
    if TABLE.get(name) is tf.errors.FailedPreconditionError:
        return type(text, (), {})(), None
    if TABLE.get(name) is tf.errors.InvalidArgumentError:
        return None, ValueError(text)
    if TABLE.get(name) is tf.errors.UnimplementedError:
        return None, NotImplementedError(text)
    return None, _InGraph(text)

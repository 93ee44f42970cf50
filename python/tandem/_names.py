"""Every engine name that must agree across ranks and is not the user's.

The engine pairs an operation of one rank with the operations of the
others by name, so a name made up here must come out the same on every rank
that makes the same calls. Each comes from a counter that every such rank
advances in the same order; all of them live in this module, under one lock:

* unnamed collectives of the global set: ``<kind>.noname.N``, one counter
  for the process (Horovod's own names): horovod.torch, horovod.tensorflow
  eagerly, horovod.keras's value collectives;
* unnamed collectives of process set k: ``<kind>.set<k>.noname.N``, one
  counter per set, so calls only the set's members make leave the other
  ranks' names alone;
* the core's own small collectives (``is_homogeneous``, the rows of torch's
  allgather gradient): ``tandem.<what>.<k>.N``, one counter per set;
* collectives traced into a graph (tandem.tensorflow inside tf.function):
  ``<kind>[.set<k>].<function>.N``, counted per graph, so each trace
  restarts them;
* numbered sequences of a frontend (tandem.keras's callbacks and
  ``broadcast_variables``): ``N`` per (namespace, set).

A collective only some ranks of a set call must be named by the caller (as
with Horovod): a counter cannot know who else called.
"""

import re
import threading
import weakref

_lock = threading.Lock()
_counts = {}  # (namespace, process set id) -> next number
_graph_counts = weakref.WeakKeyDictionary()  # graph -> {(kind, set): next number}


def _next(namespace, process_set):
    key = (namespace, process_set)
    with _lock:
        number = _counts.get(key, 0)
        _counts[key] = number + 1
    return number


def _where(process_set):
    return "set%d." % process_set if process_set else ""


def unnamed(kind, process_set=0):
    """The name of an unnamed collective of ``kind`` ("allreduce") in the
    set with engine id ``process_set``."""
    return "%s.%snoname.%d" % (kind, _where(process_set), _next("unnamed", process_set))


def given_or_unnamed(name, kind, process_set=0):
    """``name`` when the caller gave one, else :func:`unnamed`."""
    return name if name is not None else unnamed(kind, process_set)


def internal(what, process_set=0):
    """The name of one of the core's own collectives in a set."""
    return "tandem.%s.%d.%d" % (what, process_set, _next("internal." + what, process_set))


def sequence(namespace, process_set=0):
    """The next number of a frontend's own sequence (1, 2, ...)."""
    return _next(namespace, process_set) + 1


def in_graph(graph, kind, process_set, function):
    """The name of an unnamed collective traced into ``graph`` (any hashable
    object that identifies one trace: names restart with each new one), in
    the function named ``function``. Digits are dropped from that name:
    backward functions carry a process-wide id ("__backward_f_123") that may
    differ between ranks."""
    with _lock:
        counts = _graph_counts.setdefault(graph, {})
        number = counts.get((kind, process_set), 0)
        counts[(kind, process_set)] = number + 1
    function = re.sub(r"[0-9]+", "", function or "").strip("_") or "graph"
    return "%s.%s%s.%d" % (kind, _where(process_set), function, number)

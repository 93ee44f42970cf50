"""Many independent collectives in one TensorFlow graph complete in any
execution order with an inter-op pool of any size (docs/tensorflow.md), as Horovod's
asynchronous kernels do.

    tandem-run -np N python check_tf_independent_collectives.py INTER_OP_THREADS

TensorFlow is limited to INTER_OP_THREADS inter-op threads (and one intra-op
thread) before anything runs. Every check runs COUNT collectives that do not
depend on each other and checks every value:

* eagerly, one after the other (in the same order on every rank, as eager
  code must call them);
* in one tf.function (its stateful ops run in program order);
* in a TF1 graph run by a Session, where TensorFlow runs independent ops in
  any order: each rank creates the collectives in its own order (rank 0 in
  order, rank 1 reversed, others shuffled), so with ops that held an
  inter-op thread while waiting for their peers, rank 0 would wait in the
  first collectives and rank 1 in the last ones, and none would end. Named,
  so that the engine pairs them whatever the order; every kind of
  collective; run twice in the same session;
* in a TF1 graph again with one collective whose shapes differ between the
  ranks among the others: FailedPreconditionError on every rank, then the
  same session's next run of the good collectives works.
"""

import os
import random
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd

try:  # run as a script (tandem-run, srun): workers/ is sys.path[0]
    from report import run_checks
except ImportError:  # imported by the pytest module to list the checks
    from workers.report import run_checks

COUNT = 200
THREADS = 1  # inter-op threads, from the command line
KINDS = ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def sent(i, rank):
    """What ``rank`` contributes to collective i: 2 * size rows of 2."""
    size = hvd.size()
    return (np.arange(4 * size, dtype=np.float32).reshape(2 * size, 2) + 100 * i + rank)


def expected(kind, i):
    size, rank = hvd.size(), hvd.rank()
    every = [sent(i, r) for r in range(size)]
    if kind == "allreduce":
        return sum(every)
    if kind == "allgather":
        return np.concatenate(every)
    if kind == "broadcast":
        return every[i % size]
    if kind == "alltoall":
        return np.concatenate([e[2 * rank:2 * rank + 2] for e in every])
    return sum(every)[2 * rank:2 * rank + 2]  # reducescatter, Sum


def collective(kind, i, tensor, prefix):
    name = "%s.%s.%d" % (prefix, kind, i)
    if kind == "allreduce":
        return hvd.allreduce(tensor, op=hvd.Sum, name=name)
    if kind == "allgather":
        return hvd.allgather(tensor, name=name)
    if kind == "broadcast":
        return hvd.broadcast(tensor, i % hvd.size(), name=name)
    if kind == "alltoall":
        return hvd.alltoall(tensor, name=name)
    return hvd.reducescatter(tensor, op=hvd.Sum, name=name)


def order():
    """This rank's order of creating the COUNT collectives."""
    rank, indices = hvd.rank(), list(range(COUNT))
    if rank == 1:
        indices.reverse()
    elif rank > 1:
        random.Random(rank).shuffle(indices)
    return indices


def compare(results, prefix):
    wrong = []
    for i, got in results.items():
        kind = KINDS[i % len(KINDS)]
        if not np.array_equal(np.asarray(got), expected(kind, i)):
            wrong.append("%s %d" % (kind, i))
    assert not wrong, "%s: %d wrong: %s" % (prefix, len(wrong), ", ".join(wrong[:8]))
    assert len(results) == COUNT, (prefix, len(results))


@check
def eagerly():
    results = {}
    for i in range(COUNT):
        results[i] = collective(KINDS[i % len(KINDS)], i, tf.constant(sent(i, hvd.rank())),
                                "eager")
    compare(results, "eager")


@check
def in_one_tf_function():
    inputs = [tf.constant(sent(i, hvd.rank())) for i in range(COUNT)]

    @tf.function(autograph=False)
    def step(*tensors):
        return [collective(KINDS[i % len(KINDS)], i, t, "function")
                for i, t in enumerate(tensors)]
    for _ in range(2):
        compare(dict(enumerate(step(*inputs))), "tf.function")


def _session():
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=THREADS,
                                      intra_op_parallelism_threads=1)
    return tf.compat.v1.Session(config=config)


@check
def in_a_session_in_any_order():
    with tf.Graph().as_default():
        outputs = {}
        for i in order():
            outputs[i] = collective(KINDS[i % len(KINDS)], i,
                                    tf.constant(sent(i, hvd.rank())), "session")
        with _session() as session:
            for _ in range(2):
                got = session.run(outputs)
                compare(got, "session")


@check
def a_mismatch_in_a_session_then_the_next_run():
    rank = hvd.rank()
    with tf.Graph().as_default():
        good = {i: collective("allreduce", i, tf.constant(sent(i, rank)), "mismatch")
                for i in order() if i < 20}
        bad = hvd.allreduce(tf.ones([rank + 1]), name="mismatch.bad")
        with _session() as session:
            try:
                session.run([bad, good])
            except tf.errors.FailedPreconditionError as exc:
                assert "MismatchError" in str(exc) and "mismatch.bad" in str(exc), str(exc)
            else:
                raise AssertionError("shapes [1] and [2] did not fail")
            got = session.run(good)
            assert len(got) == 20, len(got)
            for i, value in got.items():
                assert np.array_equal(value, expected("allreduce", i)), i


def main(argv):
    global THREADS
    THREADS = int(argv[1])
    # Before anything runs: TensorFlow fixes its pools at first use.
    tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    hvd.init()
    return run_checks(CHECKS)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

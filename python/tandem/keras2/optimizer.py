"""DistributedOptimizer for Keras 2 (tf_keras, or TensorFlow <= 2.15's keras).

Keras 2 has two optimizer families, and a step reaches the gradients through
one of three methods, which Horovod (horovod/_keras) overrides and so does
this class:

* ``compute_gradients(loss, var_list, tape)``: the optimizers of
  ``keras.optimizers`` since Keras 2.11; ``minimize`` and ``Model.train_step``
  call it;
* ``_compute_gradients(loss, var_list, grad_loss, tape)``: the legacy
  ``OptimizerV2`` family (``keras.optimizers.legacy``), called by its
  ``minimize``; Horovod's tests and subclasses call it directly;
* ``get_gradients(loss, params)``: the TF1-era graph path of ``OptimizerV2``.

Each returns the gradients reduced over the process set by
tandem.tensorflow's GradientReducer (one op for the whole step: grouped
allreduces of the dense gradients, allgathers of IndexedSlices, compression,
``op``, ``gradient_predivide_factor``, ``groups``). ``apply_gradients``
applies what it is given, as in Horovod: a custom loop that computes its own
gradients reduces them with ``DistributedGradientTape``.

As in Horovod the optimizer is a subclass of the user's optimizer class made
per call, with the same class name and module (so a saved model loads
without Tandem), instantiated from ``optimizer.get_config()``.

``backward_passes_per_step=N``: gradients are summed locally into variables
of ``_agg_helper`` for N passes and reduced on the N-th;
``apply_gradients`` applies on that pass and otherwise only counts
``iterations`` (Horovod's LocalGradientAggregationHelperEager, whose
``counter`` Horovod's tests read).
"""

import tensorflow as tf

from tandem import _ops
from tandem import process_sets as _ps
from tandem.keras_common import optimizer as _common
from tandem.tensorflow import gradient_tape as _tape


def _ref(var):
    return var.ref() if hasattr(var, "ref") else id(var)


class _Aggregation:
    """Local accumulation over backward_passes_per_step passes."""

    def __init__(self, passes, reduce_fn, sparse_as_dense, average):
        self.passes = int(passes)
        self.reduce_fn = reduce_fn
        self.sparse_as_dense = sparse_as_dense
        self.average = average
        self.sums = {}
        self.counter = tf.Variable(0, trainable=False, dtype=tf.int32,
                                   name="tandem_aggregation_counter")

    def compute_gradients(self, grads, variables):
        summed = []
        for index, grad in enumerate(grads):
            if isinstance(grad, tf.IndexedSlices):
                if not self.sparse_as_dense:
                    raise ValueError("IndexedSlices are not supported when "
                                     "`backward_passes_per_step` > 1 and `sparse_as_dense` is "
                                     "False.")
                grad = tf.convert_to_tensor(grad)
            if grad is None:
                summed.append(None)
                continue
            if index not in self.sums:
                # Created at the first pass (eagerly, or while the first
                # trace of a tf.function runs, where variables may be made).
                self.sums[index] = tf.Variable(tf.zeros_like(grad), trainable=False,
                                               dtype=grad.dtype, name="tandem_aggregated")
            self.sums[index].assign_add(grad)
            summed.append(self.sums[index].read_value())
        self.counter.assign_add(1)

        def reduce_and_clear():
            reduced = self.reduce_fn(summed, variables)
            if self.average:
                reduced = [None if g is None else g / self.passes for g in reduced]
            self.counter.assign(0)
            for total in self.sums.values():
                total.assign(tf.zeros_like(total))
            return reduced

        return tf.cond(tf.equal(self.counter, self.passes), reduce_and_clear,
                       lambda: summed)


class _DistributedMixin:
    """Placed before the user's optimizer class in the generated class."""

    _HAS_AGGREGATE_GRAD = True
    _tandem = None  # the settings dict of the generated class

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        settings = self._tandem
        self._tandem_name = settings["name"] or "Distributed%s" % type(self).__name__
        self._allreduce_grads = _tape._make_allreduce_grads_fn(
            settings["name"], "", "", settings["compression"], settings["sparse_as_dense"],
            settings["op"], settings["gradient_predivide_factor"], settings["groups"],
            settings["process_set"])
        self._local_vars = set()
        self.process_set = settings["process_set"]
        self.scale_local_gradients = settings["scale_local_gradients"]
        self._agg_helper = None
        if settings["backward_passes_per_step"] > 1:
            self._agg_helper = _Aggregation(settings["backward_passes_per_step"],
                                            self._tandem_reduce, settings["sparse_as_dense"],
                                            settings["average_aggregated_gradients"])

    def register_local_var(self, var):
        """Registers a variable as worker-local: its gradient is not reduced
        (only divided by the set size when scale_local_gradients)."""
        self._local_vars.add(_ref(var))

    # ------------------------------------------------------------ the hooks
    def compute_gradients(self, loss, var_list, tape=None):
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        base = super()
        tape = tf.GradientTape() if tape is None else tape
        if hasattr(base, "_compute_gradients"):  # the legacy OptimizerV2 family
            pairs = base._compute_gradients(loss, var_list, grad_loss, tape=tape)
        else:
            pairs = base.compute_gradients(loss, var_list, tape=tape)
        grads, variables = zip(*pairs) if pairs else ((), ())
        return list(zip(self._allreduce(list(grads), list(variables)), variables))

    def get_gradients(self, loss, params):
        return self._allreduce(super().get_gradients(loss, params), params)

    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        if self._agg_helper is None:
            return super().apply_gradients(grads_and_vars, *args, **kwargs)
        grads_and_vars = list(grads_and_vars)  # used in both branches below
        apply = super().apply_gradients

        def apply_step():
            apply(grads_and_vars, *args, **kwargs)
            return tf.constant(True)

        def count_only():
            self.iterations.assign_add(1)
            return tf.constant(False)

        return tf.cond(tf.equal(self._agg_helper.counter, 0), apply_step, count_only)

    # ------------------------------------------------------------ reduction
    def _allreduce(self, grads, variables):
        grads = list(grads)
        if self._agg_helper is not None:
            return self._agg_helper.compute_gradients(grads, list(variables))
        return self._tandem_reduce(grads, list(variables))

    def _tandem_reduce(self, grads, variables):
        """Reduces the gradients of shared variables; gradients of local ones
        are divided by the set size when scale_local_gradients."""
        local = self._local_vars
        shared = [i for i, v in enumerate(variables) if _ref(v) not in local]
        out = list(grads)
        reduced = self._allreduce_grads([grads[i] for i in shared],
                                        [variables[i] for i in shared])
        for i, grad in zip(shared, reduced):
            out[i] = grad
        if local and self.scale_local_gradients and self.process_set.included():
            size = float(self.process_set.size())
            for i, var in enumerate(variables):
                grad = out[i]
                if _ref(var) not in local or grad is None:
                    continue
                if isinstance(grad, tf.IndexedSlices):
                    out[i] = tf.IndexedSlices(grad.values / size, grad.indices, grad.dense_shape)
                else:
                    out[i] = grad / size
        return out


def is_distributed(optimizer):
    return isinstance(optimizer, _DistributedMixin)


def _check_optimizer(keras, optimizer):
    families = tuple(c for c in (getattr(keras.optimizers, "Optimizer", None),
                                 getattr(getattr(keras.optimizers, "legacy", None), "Optimizer",
                                         None)) if c is not None)
    if not isinstance(optimizer, families):
        raise TypeError("DistributedOptimizer wraps a Keras %s optimizer (%s.optimizers.*, "
                        "%s.optimizers.legacy.*); got %s.%s"
                        % (keras.__version__, keras.__name__, keras.__name__,
                           type(optimizer).__module__, type(optimizer).__name__))
    if is_distributed(optimizer):
        raise ValueError("the optimizer is already a DistributedOptimizer; wrap the plain "
                         "optimizer once")


def create(keras, optimizer, name=None, compression=None, sparse_as_dense=False,
           gradient_predivide_factor=1.0, op=_ops.Average, backward_passes_per_step=1,
           average_aggregated_gradients=False, groups=None,
           process_set=_ps.global_process_set, scale_local_gradients=True):
    """The distributed optimizer of ``optimizer``'s class (see the module)."""
    _check_optimizer(keras, optimizer)
    _common.check_arguments(op, gradient_predivide_factor, backward_passes_per_step, groups)
    _ps.ident(process_set, "DistributedOptimizer")
    settings = {
        "name": name, "compression": compression, "sparse_as_dense": bool(sparse_as_dense),
        "op": op, "gradient_predivide_factor": float(gradient_predivide_factor),
        "groups": groups, "process_set": process_set,
        "backward_passes_per_step": int(backward_passes_per_step),
        "average_aggregated_gradients": bool(average_aggregated_gradients),
        "scale_local_gradients": bool(scale_local_gradients),
    }
    base = type(optimizer)
    namespace = {"_tandem": settings, "__module__": base.__module__,
                 "__qualname__": base.__qualname__, "__doc__": base.__doc__}
    cls = type(base.__name__, (_DistributedMixin, base), namespace)
    return cls.from_config(optimizer.get_config())

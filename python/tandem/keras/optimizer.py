"""DistributedOptimizer for Keras 3: gradients reduced over the ranks before
the wrapped optimizer applies them.

Keras 3 routes every update through ``Optimizer.apply(grads, variables)``:
the TensorFlow train step calls ``apply_gradients`` (which calls ``apply``),
the torch train step calls ``apply`` directly, custom loops call either. The
distributed optimizer is a subclass of the user's optimizer class, made per
call as Horovod does, whose ``apply`` first reduces the gradients:

* all dense gradients of a step in one grouped allreduce (one negotiation),
  or ``num_groups``/``groups`` grouped allreduces;
* sparse gradients (``tf.IndexedSlices``) gathered as Horovod does, or made
  dense first with ``sparse_as_dense=True``;
* ``op`` Average (with ``gradient_predivide_factor`` split around the sum) or
  Sum, ``compression`` applied around the reduction;
* gradients of variables registered as local (``register_local_var``,
  ``PartialDistributedOptimizer``) are not reduced, only divided by the set
  size when ``scale_local_gradients``;
* ``backward_passes_per_step=N`` accumulates N steps locally (in variables of
  the distributed optimizer, not tracked by Keras) and reduces and applies
  on every N-th; ``iterations`` still counts every step, as in Horovod.

The generated class keeps the base class's name and module, and its config
is the base optimizer's, so a model saved with it loads with plain Keras (as
the unwrapped optimizer) and with ``hvd.load_model`` (wrapped again).
"""

import keras
from keras import ops

from tandem import _ops
from tandem import process_sets as _ps
from tandem.keras import _backend
from tandem.keras.compression import Compression
from tandem.keras_common import optimizer as _common


class _Settings:
    """What a DistributedOptimizer call fixed; shared by the generated class
    and every instance from_config makes of it."""

    def __init__(self, name, compression, sparse_as_dense, op, gradient_predivide_factor,
                 backward_passes_per_step, average_aggregated_gradients, groups, process_set,
                 scale_local_gradients):
        self.name = name
        self.compression = compression
        self.sparse_as_dense = bool(sparse_as_dense)
        self.op = op
        if op == _ops.Average:
            self.prescale = 1.0 / gradient_predivide_factor
            self.postscale = float(gradient_predivide_factor)
        else:
            self.prescale = self.postscale = 1.0
        self.passes = int(backward_passes_per_step)
        self.average_aggregated = bool(average_aggregated_gradients)
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = bool(scale_local_gradients)


class _State:
    """Per-instance state, kept in a plain object so that Keras's attribute
    tracking neither saves nor broadcasts it."""

    def __init__(self):
        self.local_keys = set()
        self.accumulators = None  # var key -> keras.Variable, backward_passes_per_step > 1
        self.counter = None
        self.included = None


class CallableList(list):
    """Keras 3's ``optimizer.variables`` is a property; Keras 2 scripts call
    ``optimizer.variables()``. Both work on a distributed optimizer."""

    def __call__(self):
        return self


class _DistributedMixin:
    """Placed before the user's optimizer class in the generated class's MRO."""

    _tandem = None  # _Settings of the generated class

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tandem_attach()

    def _tandem_attach(self):
        self._tandem_state = _State()
        if self.built and self._tandem.passes > 1:
            self._tandem_make_accumulators(self._trainable_variables)

    # ------------------------------------------------------------ Horovod API
    def register_local_var(self, var):
        """Registers a variable as worker-local: its gradient is not reduced
        (only divided by the set size when scale_local_gradients)."""
        self._tandem_state.local_keys.add(self._var_key(var))

    @property
    def variables(self):
        return CallableList(super().variables)

    @property
    def lr(self):
        """Keras 2's name for ``learning_rate`` (Horovod-era callbacks read
        ``optimizer.lr``)."""
        return self.learning_rate

    @lr.setter
    def lr(self, value):
        self.learning_rate = value

    # ------------------------------------------------------------ Keras 3 hooks
    def build(self, variables):
        super().build(variables)
        if self._tandem.passes > 1:
            self._tandem_make_accumulators(variables)

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        if not grads:
            return super().apply(grads, trainable_variables)
        variables = (list(trainable_variables) if trainable_variables is not None
                     else list(self._trainable_variables))
        if len(variables) != len(grads):
            # Let Keras raise its own error for this misuse.
            return super().apply(grads, trainable_variables)
        if self._tandem.passes == 1:
            return super().apply(self._tandem_reduce(grads, variables), trainable_variables)
        return self._tandem_accumulate(grads, variables, trainable_variables)

    # ------------------------------------------------------------ reduction
    def _tandem_prefix(self):
        return self._tandem.name or "Distributed" + type(self).__name__

    def _tandem_included(self):
        state = self._tandem_state
        if state.included is None:
            state.included = self._tandem.process_set.included()
        return state.included

    def _tandem_is_local(self, var):
        return bool(self._tandem_state.local_keys) and \
            self._var_key(var) in self._tandem_state.local_keys

    def _tandem_reduce(self, grads, variables):
        """The gradients reduced over the process set (None stays None)."""
        settings = self._tandem
        _backend.check_supported("DistributedOptimizer")
        if not self._tandem_included():
            return list(grads)
        out = list(grads)
        dense, sparse = [], []
        for index, (grad, var) in enumerate(zip(grads, variables)):
            if grad is None:
                continue
            if self._tandem_is_local(var):
                if settings.scale_local_gradients:
                    out[index] = _backend.scale(grad, 1.0 / settings.process_set.size())
                continue
            if _backend.is_sparse(grad):
                if settings.sparse_as_dense:
                    grad = _backend.densify(grad)
                else:
                    sparse.append((index, grad))
                    continue
            dense.append((index, grad, var))
        prefix = self._tandem_prefix()
        for number, group in enumerate(self._tandem_split(dense)):
            compressed, contexts = [], []
            for _, grad, _ in group:
                wire, context = settings.compression.compress(grad)
                compressed.append(wire)
                contexts.append(context)
            reduced = _backend.grouped_allreduce(compressed, "%s.grads.%d" % (prefix, number),
                                                 settings.op, settings.prescale,
                                                 settings.postscale, settings.process_set)
            for (index, _, _), value, context in zip(group, reduced, contexts):
                out[index] = settings.compression.decompress(value, context)
        for number, (index, grad) in enumerate(sparse):
            out[index] = _backend.sparse_allreduce(grad, "%s.sparse.%d" % (prefix, number),
                                                   settings.op, settings.process_set)
        return out

    def _tandem_split(self, dense):
        """The dense (index, grad, var) items in groups, each one grouped
        allreduce, in the same order on every rank."""
        groups = self._tandem.groups
        if not dense:
            return []
        if groups is None or groups == 0:
            return [dense]
        if isinstance(groups, int):
            d, r = divmod(len(dense), groups)
            split = [dense[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(groups)]
            return [g for g in split if g]
        by_key = {self._var_key(var): item for item in dense for var in [item[2]]}
        split = []
        for members in groups:
            group = []
            for var in members:
                key = self._var_key(var)
                if key in by_key:
                    group.append(by_key.pop(key))
            if group:
                split.append(group)
        # Variables in no list form a group each (Horovod), in step order.
        split.extend([item] for item in dense if self._var_key(item[2]) in by_key)
        return split

    # ------------------------------------------------------------ accumulation
    def _tandem_make_accumulators(self, variables):
        state = self._tandem_state
        if state.accumulators is not None:
            return
        accumulators = {}
        for var in variables:
            accumulators[self._var_key(var)] = keras.Variable(
                initializer="zeros", shape=var.shape, dtype=var.dtype, trainable=False,
                name="tandem_accumulator")
        state.counter = keras.Variable(0, dtype="int32", trainable=False,
                                       name="tandem_accumulation_count")
        state.accumulators = accumulators

    def _tandem_accumulate(self, grads, variables, trainable_variables):
        settings = self._tandem
        if not self.built:
            with keras.name_scope(self.name, caller=self):
                self.build(variables)
            self.built = True
        self._tandem_make_accumulators(variables)
        state = self._tandem_state
        accumulators = []
        for grad, var in zip(grads, variables):
            if grad is None:
                accumulators.append(None)
                continue
            if _backend.is_sparse(grad):
                if not settings.sparse_as_dense:
                    raise ValueError("IndexedSlices are not supported when "
                                     "backward_passes_per_step > 1 and sparse_as_dense is "
                                     "False: create the DistributedOptimizer with "
                                     "sparse_as_dense=True")
                grad = _backend.densify(grad)
            accumulator = state.accumulators[self._var_key(var)]
            accumulator.assign_add(ops.cast(grad, accumulator.dtype))
            accumulators.append(accumulator)
        state.counter.assign_add(1)
        parent_apply = super().apply

        def reduce_and_apply():
            summed = [None if a is None else ops.copy(a.value) for a in accumulators]
            if settings.average_aggregated:
                summed = [None if g is None else g / settings.passes for g in summed]
            parent_apply(self._tandem_reduce(summed, variables), trainable_variables)
            for accumulator in state.accumulators.values():
                accumulator.assign(ops.zeros(accumulator.shape, accumulator.dtype))
            state.counter.assign(0)

        def count_only():
            self._iterations.assign_add(1)

        ops.cond(ops.equal(state.counter, settings.passes), reduce_and_apply, count_only)


# ------------------------------------------------------------------ factories

def _distributed_class(base, settings):
    namespace = {"_tandem": settings, "__module__": base.__module__,
                 "__qualname__": base.__qualname__, "__doc__": base.__doc__}
    return type(base.__name__, (_DistributedMixin, base), namespace)


def _check_arguments(optimizer, op, gradient_predivide_factor, backward_passes_per_step,
                     num_groups, groups, process_set):
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise TypeError("DistributedOptimizer wraps a Keras 3 optimizer (keras.optimizers.*, "
                        "tf.keras.optimizers.* with Keras 3); got %s. Keras 2 and "
                        "tf.compat.v1 optimizers are not supported"
                        % type(optimizer).__name__)
    if isinstance(optimizer, _DistributedMixin):
        raise ValueError("the optimizer is already a DistributedOptimizer; wrap the plain "
                         "optimizer once")
    groups = _ops.groups_from(num_groups, groups)
    _common.check_arguments(op, gradient_predivide_factor, backward_passes_per_step, groups)
    _ps.ident(process_set, "DistributedOptimizer")
    _backend.check_supported("DistributedOptimizer")
    return groups


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=_ops.Average,
                         backward_passes_per_step=1, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=_ps.global_process_set,
                         scale_local_gradients=True):
    """A Keras 3 optimizer of the same class as ``optimizer`` whose updates
    use gradients reduced (``op``, Average by default) over the ranks of
    ``process_set``, as horovod.tensorflow.keras.DistributedOptimizer.

    It is made from ``optimizer.get_config()`` (as Horovod does): state of an
    optimizer that already took steps is not carried over. ``device_dense``
    and ``device_sparse`` are accepted and ignored (Tandem reduces a tensor
    where it lives)."""
    del device_dense, device_sparse
    groups = _check_arguments(optimizer, op, gradient_predivide_factor,
                              backward_passes_per_step, num_groups, groups, process_set)
    settings = _Settings(name, compression, sparse_as_dense, op, gradient_predivide_factor,
                         backward_passes_per_step, average_aggregated_gradients, groups,
                         process_set, scale_local_gradients)
    cls = _distributed_class(type(optimizer), settings)
    return cls.from_config(optimizer.get_config())


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=_ops.Average,
                                backward_passes_per_step=1,
                                average_aggregated_gradients=False, groups=None,
                                process_set=_ps.global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose ``local_layers`` keep their own gradients
    (not reduced; divided by the set size when scale_local_gradients)."""
    return _common.partial_distributed(DistributedOptimizer, locals(), keras.layers.Layer,
                                       "keras.layers.Layer")


def is_distributed(optimizer):
    return isinstance(optimizer, _DistributedMixin)


def loss_scaled(optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000):
    """For mixed_float16: the distributed optimizer rebuilt around a
    LossScaleOptimizer of a plain copy of what it wraps, with the same
    settings. Keras would otherwise wrap the distributed optimizer in a
    LossScaleOptimizer, which skips the step of a rank whose own gradients
    are not finite, before that rank joins the reduction the others wait in.
    In this order the finiteness check runs on the reduced gradients, which
    are the same on every rank, so all ranks skip or apply together."""
    base = type(optimizer).__bases__[1]
    plain = base.from_config(optimizer.get_config())
    cls = _distributed_class(keras.optimizers.LossScaleOptimizer, optimizer._tandem)
    wrapped = cls(plain, initial_scale=initial_scale,
                  dynamic_growth_steps=dynamic_growth_steps)
    wrapped._tandem_state.local_keys = set(optimizer._tandem_state.local_keys)
    return wrapped


def wrap_in_place(optimizer, compression=Compression.none):
    """Makes an existing optimizer (e.g. the one keras.models.load_model
    restored, variables and all) distributed, keeping its state: its class
    becomes the generated subclass. Returns it."""
    _check_arguments(optimizer, _ops.Average, 1.0, 1, 0, None, _ps.global_process_set)
    settings = _Settings(None, compression, False, _ops.Average, 1.0, 1, False, None,
                         _ps.global_process_set, True)
    optimizer.__class__ = _distributed_class(type(optimizer), settings)
    optimizer._tandem_attach()
    return optimizer

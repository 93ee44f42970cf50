"""DistributedGradientTape: a step's gradients reduced in one operation.

``tape.gradient`` computes the local gradients, then one op (one
``tf.numpy_function`` in a graph, one call eagerly) starts, for the whole
step, one grouped allreduce per group of dense gradients (one group unless
``groups``/``num_groups`` says otherwise) plus an allgather of the values and
indices of each sparse gradient (``tf.IndexedSlices``, as Horovod does when
``sparse_as_dense`` is off), and waits for all of them: the engine
negotiates the step once, not once per variable, and fuses the dense
gradients that share a type.

As in Horovod, a rank outside ``process_set`` (or a set of one rank) keeps
its local gradients, ``gradient_predivide_factor`` divides before the sum and
multiplies after it, and gradients of sources registered as local
(``register_local_source``, ``PartialDistributedGradientTape``) are not
reduced but divided by the set size (``scale_local_gradients``).
"""

import zlib

import tensorflow as tf

from tandem import _arrays, _basics, _ops
from tandem import process_sets as _ps
from tandem.tensorflow import _bridge, mpi_ops
from tandem.tensorflow.compression import Compression


def _split(items, count):
    """``items`` in ``count`` contiguous parts whose sizes differ by at most
    one, the first parts taking the extra items."""
    base, extra = divmod(len(items), count)
    parts, start = [], 0
    for i in range(count):
        end = start + base + (1 if i < extra else 0)
        parts.append(items[start:end])
        start = end
    return [p for p in parts if p]


def _key(source):
    return source.ref() if hasattr(source, "ref") else id(source)


class GradientReducer:
    """Reduces a list of gradients (Tensors, IndexedSlices or None) as
    Horovod's allreduce_grads does, in one op. Also what the Keras frontend
    uses under its DistributedOptimizer."""

    def __init__(self, compression=Compression.none, sparse_as_dense=False, op=_ops.Average,
                 gradient_predivide_factor=1.0, groups=None,
                 process_set=mpi_ops.global_process_set, name=None):
        self.op = _ops.resolve_op(op, None, "DistributedGradientTape")
        if self.op == _ops.Adasum:
            _ops.check_adasum(_basics.size(), process_set, mpi_ops.global_process_set)
        if gradient_predivide_factor != 1.0 and self.op != _ops.Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        if groups is not None and not (isinstance(groups, list) or
                                       (isinstance(groups, int) and groups >= 0)):
            raise ValueError("groups should be a non-negative integer or a list of lists of "
                             "tf.Variable")
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.predivide = float(gradient_predivide_factor)
        self.groups = groups
        self.process_set = process_set
        self.name = name
        _ps.ident(process_set, "DistributedGradientTape")

    # ------------------------------------------------------------- layout
    def _group_layout(self, dense, sources):
        """Lists of indices into ``dense`` (each one engine grouped allreduce)."""
        if not dense:
            return []
        if isinstance(self.groups, list):
            position = {}
            if sources is None:
                raise ValueError("groups given as lists of variables: the variables of the "
                                 "gradients must be passed too")
            for i in dense:
                position.setdefault(_key(sources[i]), i)
            layout, used = [], set()
            for group in self.groups:
                members = [position[_key(v)] for v in group
                           if _key(v) in position and position[_key(v)] not in used]
                used.update(members)
                if members:
                    layout.append(sorted(members))
            # As Horovod: a gradient named in no group is a group of its own.
            layout += [[i] for i in dense if i not in used]
            return layout
        if isinstance(self.groups, int) and self.groups > 0:
            return _split(list(dense), self.groups)
        return [list(dense)]

    def _base_name(self, dense, sparse, layout, ps):
        if self.name is not None:
            return self.name
        if not tf.executing_eagerly():
            return _bridge.name_for(None, "grads", ps)
        # Eagerly, a name that is the same at every step (so the engine's
        # response cache serves the step) and differs between tapes over
        # different variables (a GAN's two tapes), the same on every rank.
        signature = repr(([(tuple(g.shape), g.dtype.name) for g in dense],
                          [(tuple(s.values.shape[1:]), s.values.dtype.name) for s in sparse],
                          layout, self.op, self.predivide))
        where = "set%d." % ps if ps else ""
        return "grads.%s%08x" % (where, zlib.crc32(signature.encode()) & 0xffffffff)

    # ------------------------------------------------------------- reduce
    @_bridge.no_autograph
    def __call__(self, grads, sources=None):
        grads = list(grads)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        if not self.process_set.included() or self.process_set.size() <= 1:
            return grads
        dense = [i for i, g in enumerate(grads)
                 if g is not None and not isinstance(g, tf.IndexedSlices)]
        sparse = [i for i, g in enumerate(grads) if isinstance(g, tf.IndexedSlices)]
        if sparse and self.op not in (_ops.Sum, _ops.Average):
            raise NotImplementedError("Only Sum and Average ops are supported with "
                                      "tf.IndexedSlices (or pass sparse_as_dense=True)")
        layout = self._group_layout(dense, sources)
        out = list(grads)
        if not dense and not sparse:
            return out
        compressed = {}
        for i in dense:
            compressed[i] = self.compression.compress(tf.convert_to_tensor(grads[i]))
        dense_in = [compressed[i][0] for i in dense]
        sparse_in = [grads[i] for i in sparse]
        results = self._reduce(dense, dense_in, sparse_in, layout)
        for k, i in enumerate(dense):
            out[i] = self.compression.decompress(results[k], compressed[i][1])
        size = self.process_set.size()
        for k, i in enumerate(sparse):
            values, indices = results[len(dense) + 2 * k], results[len(dense) + 2 * k + 1]
            if self.op == _ops.Average:
                values = values / tf.cast(size, values.dtype)
            out[i] = tf.IndexedSlices(values, indices, dense_shape=grads[i].dense_shape)
        return out

    def _reduce(self, dense, dense_in, sparse_in, layout):
        """One op: grouped allreduces of the dense gradients, allgathers of
        the sparse ones. Returns dense results (in ``dense`` order), then
        values and indices of each sparse gradient."""
        ps = _ps.ident(self.process_set, "DistributedGradientTape")
        op = self.op
        if op == _ops.Adasum and sparse_in:
            raise NotImplementedError("The Adasum reduction does not support sparse tensors; "
                                      "pass sparse_as_dense=True")
        prescale, postscale = ((1.0 / self.predivide, self.predivide) if op == _ops.Average
                               else (1.0, 1.0))
        for t in dense_in:
            _arrays.check_reduction(t.dtype.as_numpy_dtype, op, "DistributedGradientTape")
        position = {i: k for k, i in enumerate(dense)}
        slots = [[position[i] for i in group] for group in layout]
        base = self._base_name(dense_in, sparse_in, slots, ps)
        n_dense = len(dense_in)

        def start(arrays):
            pendings = []
            for g, group in enumerate(slots):
                names = ["%s.%d.%d" % (base, g, k) for k in range(len(group))]
                pendings.append(_arrays.start_grouped_allreduce(
                    names, [arrays[k] for k in group], op, prescale, postscale, ps))
            for s in range(len(sparse_in)):
                values, indices = arrays[n_dense + 2 * s], arrays[n_dense + 2 * s + 1]
                pendings.append(_arrays.start_allgather("%s.sparse.%d.values" % (base, s),
                                                        values, ps))
                pendings.append(_arrays.start_allgather("%s.sparse.%d.indices" % (base, s),
                                                        indices, ps))

            def finish():
                done = _arrays.wait_all(pendings)
                reduced = [None] * n_dense
                for group, outs in zip(slots, done[:len(slots)]):
                    for k, o in zip(group, outs):
                        reduced[k] = o
                return reduced + done[len(slots):]
            return finish

        inputs = list(dense_in)
        dtypes = [t.dtype for t in dense_in]
        shapes = [t.shape for t in dense_in]
        for s in sparse_in:
            inputs += [s.values, s.indices]
            dtypes += [s.values.dtype, s.indices.dtype]
            shapes += [tf.TensorShape([None]).concatenate(s.values.shape[1:]),
                       tf.TensorShape([None])]
        return _bridge.call("DistributedGradientTape", start, inputs, dtypes, shapes)


@_bridge.no_autograph
def _make_allreduce_grads_fn(name, device_dense, device_sparse, compression, sparse_as_dense,
                             op, gradient_predivide_factor, groups, process_set):
    """Horovod's internal helper, kept for frontends written against it:
    returns ``allreduce_grads(grads, vars=None, use_generic_names=False)``."""
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set)

    def allreduce_grads(grads, vars=None, use_generic_names=False):  # noqa: A002 (Horovod's)
        return reducer(grads, vars)
    return allreduce_grads


class _DistributedTape:
    """Methods added to the user's tape class (Horovod makes the same kind of
    subclass, so isinstance(tape, tf.GradientTape) stays true)."""

    @_bridge.no_autograph
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE, use_generic_names=False):
        grads = super().gradient(target, sources, output_gradients=output_gradients,
                                 unconnected_gradients=unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads)  # None and IndexedSlices stay leaves
        local = self._tandem_local
        shared = [i for i, s in enumerate(flat_sources) if _key(s) not in local]
        reduced = self._tandem_reducer([flat_grads[i] for i in shared],
                                       [flat_sources[i] for i in shared])
        out = list(flat_grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        reducer = self._tandem_reducer
        if local and self._tandem_scale_local and reducer.process_set.included():
            size = float(reducer.process_set.size())
            for i, s in enumerate(flat_sources):
                g = out[i]
                if _key(s) not in local or g is None:
                    continue
                if isinstance(g, tf.IndexedSlices):
                    out[i] = tf.IndexedSlices(g.values / size, g.indices, g.dense_shape)
                else:
                    out[i] = g / size
        return tf.nest.pack_sequence_as(sources, out)

    def register_local_source(self, source):
        """Gradients of ``source`` stay local (not reduced)."""
        self._tandem_local.add(_key(source))

    def get_local_and_global_gradients(self, target, sources, output_gradients=None,
                                       use_generic_names=False):
        grads = self.gradient(target, sources, output_gradients=output_gradients)
        local, shared = [], []
        for s, g in zip(sources, grads):
            (local if _key(s) in self._tandem_local else shared).append((s, g))
        return local, shared


_tape_classes = {}


def _distributed_class(base):
    cls = _tape_classes.get(base)
    if cls is None:
        cls = type(base.__name__, (_DistributedTape, base), {})
        _tape_classes[base] = cls
    return cls


@_bridge.no_autograph
def DistributedGradientTape(gradtape, device_dense="", device_sparse="",
                            compression=Compression.none, sparse_as_dense=False,
                            op=_ops.Average, gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=mpi_ops.global_process_set,
                            scale_local_gradients=True):
    """The same tape, whose gradient() returns gradients reduced over the
    ranks (averaged by default), all of a step in one operation.
    ``device_dense``/``device_sparse`` are accepted and unused (reduction
    runs on the host)."""
    if not isinstance(gradtape, tf.GradientTape):
        raise ValueError("DistributedGradientTape wraps a tf.GradientTape, got %s"
                         % type(gradtape).__name__)
    groups = _ops.groups_from(num_groups, groups)
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set)
    cls = _distributed_class(type(gradtape))
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)  # the same recorded tape, not a copy of it
    tape._tandem_reducer = reducer
    tape._tandem_local = set()
    tape._tandem_scale_local = scale_local_gradients
    return tape


@_bridge.no_autograph
def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="",
                                   compression=Compression.none, sparse_as_dense=False,
                                   op=_ops.Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=mpi_ops.global_process_set,
                                   local_layers=None, scale_local_gradients=True):
    """DistributedGradientTape whose ``local_layers`` (Keras layers) keep their
    gradients local."""
    from tandem._which_keras import keras2
    keras = keras2()  # the layers of a Keras 2 model are tf_keras's (or keras 2.x's)
    if keras is None:
        import keras
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    elif not all(isinstance(layer, keras.layers.Layer) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape

"""DistributedOptimizer: gradients are allreduced while backward still runs.

Each parameter's gradient accumulator gets a hook; when autograd has produced
the gradient (``backward_passes_per_step`` times), the hook starts a
nonblocking allreduce of it, so communication of the last layers overlaps the
backward pass of the first ones. ``step()`` (or ``synchronize()``) waits for
every allreduce and then runs the wrapped optimizer's own step.

What Horovod's scripts and tests read off the optimizer is kept under
Horovod's names: ``_parameter_names`` (parameter -> name; without
``named_parameters`` the names are ``allreduce.noname.<group>.<index>``, the
same on every rank), ``backward_passes_per_step``,
``set_backward_passes_per_step()``, ``_allreduce_delay``, ``op``,
``gradient_predivide_factor``, ``sparse_as_dense``, ``process_set``,
``_groups``, ``_handles``, ``_requires_update``, ``_synchronized``,
``_should_synchronize``, ``_compression``. As in Horovod, a world of one
registers no hooks and reduces nothing.

Every rank must produce the same gradients in the same order, which holds for
the same model run on every rank; parameters whose hook did not fire (unused
in this pass, frozen after construction) are reduced at ``synchronize()``
(zeros when they have no gradient), in registration order.
"""

import contextlib
import os
import warnings

import torch

from tandem import _basics, _ops, errors
from tandem.torch import _parameter_names, adasum_optimizer, mpi_ops
from tandem.torch.compression import Compression
from tandem.torch.functions import broadcast_object


def _split_list(items, n):
    """``items`` in ``n`` consecutive chunks whose sizes differ by at most one
    (the first ones larger), as Horovod forms ``groups=n``."""
    q, r = divmod(len(items), n)
    bounds = [i * q + min(i, r) for i in range(n + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(n)]


class _DistributedOptimizer(torch.optim.Optimizer):
    _tandem_distributed = True  # broadcast_optimizer_state steps the inner optimizer

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression

        ordered = _parameter_names.named_in_order(self.param_groups, named_parameters)
        self._parameter_names = {p: name for name, p in ordered}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for _, p in ordered}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set

        self._handles = {}  # parameter or group tuple -> (handle, compression ctx)
        self._grad_accs = []
        self._requires_update = set()
        self._order = []  # parameters with hooks, in registration order
        self._synchronized = False
        self._should_synchronize = True

        if groups is not None:
            if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
                raise ValueError("groups should be a non-negative integer or a list of list of "
                                 "torch.Tensor.")
            if isinstance(groups, list):
                seen = set()
                for group in groups:
                    for p in group:
                        if not isinstance(p, torch.Tensor):
                            raise ValueError("groups must consist of torch.Tensor.")
                        if id(p) in seen:
                            raise ValueError("A parameter can only appear once in groups.")
                        seen.add(id(p))
        self._groups = groups
        self._p_to_group = {}
        self._group_counts = {}

        if process_set.included() and (_basics.size() > 1
                                        or os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks()

    # -------------------------------------------------------------- state
    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    # -------------------------------------------------------------- hooks
    def _register_hooks(self):
        trainable = [p for group in self.param_groups for p in group["params"]
                     if p.requires_grad]
        if self._groups is not None:
            # Groups must be formed alike on every rank: order the parameters
            # as rank 0 names them (a collective over the optimizer's set).
            order = broadcast_object([self._parameter_names[p] for p in trainable],
                                     root_rank=self._first_rank(),
                                     name="tandem.optimizer.groups",
                                     process_set=self.process_set)
            position = {name: i for i, name in enumerate(order)}
            trainable_sorted = sorted(trainable,
                                      key=lambda p: position.get(self._parameter_names[p],
                                                                 len(position)))
            if isinstance(self._groups, list):
                ids = {id(p) for p in trainable_sorted}
                lists = [[p for p in group if id(p) in ids] for group in self._groups]
                grouped = {id(p) for group in lists for p in group}
                lists += [[p] for p in trainable_sorted if id(p) not in grouped]
            else:
                lists = _split_list(trainable_sorted, self._groups)
            for members in lists:
                members = tuple(members)
                for p in members:
                    self._p_to_group[p] = members
                self._group_counts[members] = 0
        for p in trainable:
            self._requires_update.add(p)
            self._order.append(p)
            # The gradient accumulator of p: its hook runs once p.grad is final
            # for this backward pass.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_hook(p))
            self._grad_accs.append(accumulator)

    def _first_rank(self):
        ranks = self.process_set.ranks
        return 0 if not ranks else ranks[0]

    def _make_hook(self, p):
        def hook(*_):
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times "
                        "before call to step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            assert not p.grad.requires_grad
            assert self._allreduce_delay[p] > 0
            handle, ctx = None, None
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                if self._groups is not None:
                    group = self._p_to_group[p]
                    self._group_counts[group] += 1
                    if self._group_counts[group] == len(group):
                        self._handles[group] = self._grouped_allreduce_grad_async(group)
                        for member in group:
                            self._handles.pop(member, None)
                        self._group_counts[group] = 0
                        return
                else:
                    handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def _scales(self):
        if self.op == mpi_ops.Average:
            # Average is a Sum scaled by 1 / size after it; the predivide
            # factor moves part of that before the sum.
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # No gradient here (unused in this pass), but other ranks may have
            # one: take part with zeros.
            p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        name = self._parameter_names[p]
        tensor = p.grad
        if tensor.is_sparse:
            if self.sparse_as_dense:
                tensor = tensor.to_dense()
            else:
                return mpi_ops.sparse_allreduce_async(tensor, name=name, op=self.op,
                                                      process_set=self.process_set), None
        compressed, ctx = self._compression.compress(tensor)
        prescale, postscale = self._scales()
        handle = mpi_ops.allreduce_async_(compressed, name=name, op=self.op,
                                          prescale_factor=prescale, postscale_factor=postscale,
                                          process_set=self.process_set)
        return handle, ctx

    def _grouped_allreduce_grad_async(self, group):
        for p in group:
            if p.grad is None:
                p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
        compressed, ctxs = zip(*[self._compression.compress(p.grad) for p in group])
        prescale, postscale = self._scales()
        handle = mpi_ops.grouped_allreduce_async_(list(compressed),
                                                  name=self._parameter_names[group[0]],
                                                  op=self.op, prescale_factor=prescale,
                                                  postscale_factor=postscale,
                                                  process_set=self.process_set)
        return handle, ctxs

    # -------------------------------------------------------------- steps
    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hook did
        not run, e.g. parameters unused in this pass) and writes the results
        into ``p.grad``."""
        if not self.process_set.included():
            self._synchronized = True
            return
        completed = set()
        for key in self._handles:
            completed.update(key if isinstance(key, tuple) else (key,))
        for p in self._order:  # registration order: the same on every rank
            if p in self._requires_update and p not in completed:
                self._handles[p] = self._allreduce_grad_async(p)
        for key, (handle, _ctx) in list(self._handles.items()):
            if handle is None:  # a hook fired, but not backward_passes_per_step times
                self._handles[key] = self._allreduce_grad_async(key)
        first_error = None
        for key, (handle, ctx) in self._handles.items():
            try:
                if isinstance(key, tuple):
                    outputs = mpi_ops.synchronize(handle)
                    for p, output, pctx in zip(key, outputs, ctx):
                        self._set_grad(p, output, pctx)
                else:
                    output = handle() if callable(handle) else mpi_ops.synchronize(handle)
                    self._set_grad(key, output, ctx)
            except errors.TandemError as exc:
                first_error = first_error or exc
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        for group in self._group_counts:
            self._group_counts[group] = 0
        self._handles.clear()
        if first_error is not None:
            # The gradients were not reduced: the next step() must reduce
            # again (and not warn about a second reduction).
            raise first_error
        self._synchronized = True

    def _set_grad(self, p, output, ctx):
        if p.grad.is_sparse:
            aggregated = self._compression.decompress(output, ctx)
            if not aggregated.is_sparse:  # sparse_as_dense: back to sparse for the step
                aggregated = aggregated.to_sparse()
            p.grad.zero_().add_(aggregated)  # sparse tensors have no set_()
        elif output is not p.grad:
            p.grad.copy_(self._compression.decompress(output, ctx))

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For a step right after an explicit synchronize() (e.g. gradient
        clipping in between): step() then does not synchronize again."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                # Horovod's wording: scripts and Horovod's tests match on it.
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.", stacklevel=2)
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=mpi_ops.Average,
                         gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=mpi_ops.global_process_set):
    """Wraps a torch optimizer so that gradients are reduced (``op``, Average by
    default) over the ranks of ``process_set`` before each step, as
    horovod.torch.DistributedOptimizer does."""
    if gradient_predivide_factor != 1.0 and op != mpi_ops.Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    groups = _ops.groups_from(num_groups, groups)
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if op == mpi_ops.Adasum and _basics.size() > 1:
        return adasum_optimizer.wrap(optimizer, named_parameters, compression,
                                     backward_passes_per_step, process_set)
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)

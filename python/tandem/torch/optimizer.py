"""DistributedOptimizer: gradients are allreduced while backward still runs.

Each parameter's gradient accumulator gets a hook; when autograd has produced
the gradient (``backward_passes_per_step`` times), the hook starts a
nonblocking allreduce of it, so communication of the last layers overlaps the
backward pass of the first ones. ``step()`` (or ``synchronize()``) waits for
every allreduce and then runs the wrapped optimizer's own step.

Every rank must produce the same gradients in the same order, which holds for
the same model run on every rank; with ``groups``, a group's gradients are
reduced together once the last of them is ready.
"""

import contextlib
import warnings

import torch

from tandem import errors
from tandem.torch import mpi_ops
from tandem.torch.compression import Compression


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._op = op
        self._predivide = gradient_predivide_factor
        self._sparse_as_dense = sparse_as_dense
        self._process_set = process_set
        self._passes = backward_passes_per_step

        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
                raise ValueError("named_parameters should be a sequence of (name, parameter) "
                                 "tuples, usually model.named_parameters()")
            names = [name for name, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("named_parameters holds duplicate names: %s" % sorted(
                    n for n in set(names) if names.count(n) > 1))
            self._names = {p: name for name, p in named}
            unnamed = [p for p in all_params if p not in self._names]
            if unnamed:
                raise ValueError("named_parameters does not name %d of the optimizer's "
                                 "parameters: pass model.named_parameters() of the model "
                                 "whose parameters the optimizer holds" % len(unnamed))
        else:
            self._names = {p: "param.%d" % i for i, p in enumerate(all_params)}
        self._order = [p for p in all_params if p.requires_grad]
        self._groups = self._make_groups(groups)
        self._delay = {p: self._passes for p in self._order}
        self._handles = {}  # param -> (handle, compression ctx, wire tensor)
        self._group_ready = {}
        self._synchronized = False
        self._should_synchronize = True
        self._hooks = []
        if process_set.included():
            self._register_hooks()

    # -------------------------------------------------------------- groups
    def _make_groups(self, groups):
        if groups is None or groups == 0:
            return {}
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError("groups must be a positive number or lists of parameters")
            size = -(-len(self._order) // groups)
            lists = [self._order[i:i + size] for i in range(0, len(self._order), size)]
        else:
            lists = [list(g) for g in groups]
            known = set(self._order)
            for g in lists:
                if any(p not in known for p in g):
                    raise ValueError("groups name a parameter the optimizer does not hold")
        membership = {}
        for index, members in enumerate(lists):
            for p in members:
                membership[p] = (index, members)
        return membership

    # -------------------------------------------------------------- hooks
    def _register_hooks(self):
        for p in self._order:
            # The gradient accumulator of p: its hook runs once p.grad is final
            # for this backward pass.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            self._hooks.append(accumulator.register_hook(self._make_hook(p)))
            self._hooks.append(accumulator)  # keep it alive

    def _make_hook(self, p):
        def hook(*_):
            if p in self._handles and self._handles[p][0] is not None:
                raise AssertionError(
                    "gradient of %s computed again before its allreduce finished: call "
                    "optimizer.step() or synchronize() between backward passes, or raise "
                    "backward_passes_per_step" % self._names[p])
            self._delay[p] -= 1
            if self._delay[p] > 0:
                return
            if p in self._groups:
                self._group_member_ready(p)
            else:
                self._handles[p] = self._start(p)
        return hook

    def _group_member_ready(self, p):
        index, members = self._groups[p]
        ready = self._group_ready.setdefault(index, set())
        ready.add(p)
        if len(ready) == len(members):
            for member in members:  # same order on every rank
                self._handles[member] = self._start(member)
            del self._group_ready[index]

    def _start(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        if p.grad.is_sparse:
            if not self._sparse_as_dense:
                raise errors.make(
                    "TANDEM_ERR_INVALID_ARGUMENT",
                    "gradient of %s is sparse: create the optimizer with sparse_as_dense=True"
                    % self._names[p])
            p.grad = p.grad.to_dense()
        wire, ctx = self._compression.compress(p.grad)
        if self._op == mpi_ops.Average:
            prescale, postscale = 1.0 / self._predivide, self._predivide
        else:
            prescale, postscale = 1.0, 1.0
        handle = mpi_ops.allreduce_async_(wire, name="grad." + self._names[p], op=self._op,
                                          prescale_factor=prescale,
                                          postscale_factor=postscale,
                                          process_set=self._process_set)
        return handle, ctx, wire

    # -------------------------------------------------------------- steps
    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hook did
        not run, e.g. parameters unused in this pass) and writes the results
        into ``p.grad``."""
        if not self._process_set.included():
            self._synchronized = True
            return
        for p in self._order:  # registration order: the same on every rank
            if p not in self._handles:
                self._handles[p] = self._start(p)
        self._group_ready.clear()
        first_error = None
        for p in self._order:
            handle, ctx, wire = self._handles.pop(p)
            try:
                reduced = mpi_ops.synchronize(handle)
            except errors.TandemError as exc:
                first_error = first_error or exc
                continue
            if wire is not p.grad:
                p.grad.copy_(self._compression.decompress(reduced, ctx))
        self._delay = {p: self._passes for p in self._order}
        if first_error is not None:
            # The gradients were not reduced: the next step() must reduce
            # again (and not warn about a second reduction).
            raise first_error
        self._synchronized = True

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
                warnings.warn("optimizer.step() after optimizer.synchronize() reduces the "
                              "gradients a second time; wrap the step in "
                              "`with optimizer.skip_synchronize():`")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(): the gradients are still "
                "being allreduced")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=mpi_ops.Average,
                         gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=mpi_ops.global_process_set):
    """Wraps a torch optimizer so that gradients are averaged (``op``) over the
    ranks before each step, as horovod.torch.DistributedOptimizer does."""
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be at least 1, got %r"
                         % backward_passes_per_step)
    if gradient_predivide_factor != 1.0 and op != mpi_ops.Average:
        raise ValueError("gradient_predivide_factor applies to op=Average only")
    if op not in (mpi_ops.Average, mpi_ops.Sum):
        raise ValueError("DistributedOptimizer reduces gradients with Average or Sum, got %r"
                         % (op,))
    if num_groups and groups is None:
        groups = num_groups  # Horovod's older spelling
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)

"""DistributedOptimizer(op=hvd.Adasum): Horovod's delta optimizer.

Adasum combines what each rank would do to the model, not its gradient: each
rank steps the wrapped optimizer on its own gradient, and the change that
step made to a parameter (the delta) is what the ranks combine with Adasum
(docs/runtime.md, Adasum). Every rank then applies the combined delta to the
parameter as it was before the local step, so the ranks stay identical.

As in Horovod, the work starts in the gradient hooks: when a parameter's
gradient is ready (``backward_passes_per_step`` times), the wrapped
optimizer steps on that parameter alone, the parameter's tensor is turned
into its delta in place and its Adasum allreduce is started; ``step()``
waits for each, adds it to the saved starting value and writes that back.
A world of one is the plain DistributedOptimizer (Horovod's choice too).
Horovod's restrictions hold: the global process set only, no
``skip_synchronize()``, and ``synchronize()`` does nothing.
"""

import contextlib

import torch

from tandem.torch import _parameter_names, mpi_ops


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    _tandem_distributed = True  # broadcast_optimizer_state steps the inner optimizer

    def __init__(self, params, named_parameters, compression, backward_passes_per_step):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        ordered = _parameter_names.named_in_order(self.param_groups, named_parameters)
        self._parameter_names = {p: name for name, p in ordered}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for _, p in ordered}
        self._handles = {}  # parameter -> (handle or None, compression ctx)
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        # Where each parameter stood before its local step.
        self._starting_models = {p: torch.zeros_like(p, requires_grad=False)
                                 for _, p in ordered}
        self._register_hooks()

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = passes

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                # A gradient to step on even where backward gives none.
                p.grad = p.data.new(p.size()).zero_()
                self._requires_update.add(p)
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._make_hook(p))
                self._grad_accs.append(accumulator)

    def _start_delta(self, p):
        """Steps the wrapped optimizer on p alone, leaves p holding the delta
        and starts its Adasum allreduce in place."""
        start = self._starting_models[p]
        start.data.copy_(p.data)
        saved = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, saved):
                group["params"] = params
        p.data.sub_(start)
        compressed, ctx = self._compression.compress(p)
        handle = mpi_ops.allreduce_async_(compressed.data, name=self._parameter_names.get(p),
                                          op=mpi_ops.Adasum)
        return handle, ctx

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None \
                    and self._allreduce_delay[p] <= 0:
                raise AssertionError("Gradients were computed more than "
                                     "backward_passes_per_step times before call to step(). "
                                     "Increase backward_passes_per_step to accumulate "
                                     "gradients locally.")
            self._allreduce_delay[p] -= 1
            started = (None, None)
            if self._allreduce_delay[p] == 0:
                started = self._start_delta(p)
            self._handles[p] = started
        return hook

    def synchronize(self):
        pass

    @contextlib.contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using Adasum "
                             "optimizer.")

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in sorted(self._requires_update - set(self._handles),
                        key=lambda q: self._parameter_names.get(q, "")):
            self._handles[p] = self._start_delta(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:  # step() before backward_passes_per_step passes
                handle, ctx = self._start_delta(p)
            delta = self._compression.decompress(mpi_ops.synchronize(handle), ctx)
            start = self._starting_models[p]
            start.data.add_(delta.data)
            p.data.copy_(start)
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def wrap(optimizer, named_parameters, compression, backward_passes_per_step, process_set):
    """The Adasum optimizer over ``optimizer``'s class, as Horovod builds it."""
    if process_set != mpi_ops.global_process_set:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedAdasumOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step)

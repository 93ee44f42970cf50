"""State synchronisation helpers: parameters, optimizer state, Python objects."""

import io
import pickle

import torch

from tandem import _basics, _objects
from tandem import process_sets as _ps
from tandem.torch import mpi_ops


def broadcast_parameters(params, root_rank, process_set=mpi_ops.global_process_set):
    """Overwrites every rank's tensors with root_rank's, in place. ``params``
    is ``model.state_dict()`` (broadcast in sorted key order),
    ``model.named_parameters()`` or a list of tensors (``model.parameters()``);
    named tensors are broadcast under their names (engine name
    ``broadcast.<name>``, as in Horovod), unnamed ones under generated names."""
    if isinstance(params, dict):
        items = sorted(params.items())
    elif isinstance(params, (list, tuple)) or hasattr(params, "__iter__"):
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
        if any(len(item) != 2 for item in items):
            raise ValueError("params should be a dict (state_dict), (name, tensor) pairs "
                             "(named_parameters) or tensors (parameters)")
    else:
        raise ValueError("invalid params of type: %s" % type(params))
    handles = []
    for name, tensor in items:
        if not isinstance(tensor, torch.Tensor):
            continue
        data = tensor.data if isinstance(tensor, torch.nn.Parameter) else tensor
        handles.append(mpi_ops.broadcast_async_(data, root_rank, name=name,
                                                process_set=process_set))
    for handle in handles:
        mpi_ops.synchronize(handle)


def _initialize_state(optimizer, model):
    """Horovod's initialization of a fresh optimizer's state before it is
    broadcast: every trainable parameter gets a zero gradient (sparse for
    SparseAdam, and for SGD over a sparse Embedding of ``model``) and the
    wrapped optimizer takes one step. Frozen parameters (requires_grad False)
    keep grad None and get no state. As in Horovod, the step is real: weight
    decay or momentum may move the parameters, alike on every rank."""
    sparse = set()
    if model is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.sparse:
                sparse.update(id(p) for p in module.parameters())
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
                if isinstance(optimizer, torch.optim.SparseAdam) or (
                        isinstance(optimizer, torch.optim.SGD) and id(p) in sparse):
                    p.grad = p.grad.to_sparse()
    if getattr(type(optimizer), "_tandem_distributed", False):
        # A DistributedOptimizer's step() would reduce gradients, a collective
        # only this call makes: step the optimizer it wraps instead.
        super(type(optimizer), optimizer).step()
    else:
        optimizer.step()


def broadcast_optimizer_state(optimizer, root_rank, model=None,
                              process_set=mpi_ops.global_process_set):
    """Makes every rank's optimizer state (per-parameter buffers and the
    hyper-parameters of each group) equal to root_rank's. A fresh optimizer
    first gets its state initialized as Horovod does (zero gradients for the
    trainable parameters, one step); ``model`` names sparse embeddings."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    if not process_set.included():
        return
    if len(optimizer.state_dict()["state"]) == 0:
        _initialize_state(optimizer, model)
    state = broadcast_object(optimizer.state_dict(), root_rank, name="bcast.optimizer_state",
                             process_set=process_set)
    if _basics.rank() != root_rank:
        optimizer.load_state_dict(state)


def _serialize(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer, pickle_protocol=pickle.HIGHEST_PROTOCOL)
    return buffer.getvalue()


def _to_this_rank(storage, location):
    """torch.load's map_location: a CUDA tensor pickled on the root means
    "on the GPU" there; here it goes to this rank's current device rather
    than to the root's device index (another rank's GPU on a shared node).
    Anything else is restored as torch would (None)."""
    if location.startswith("cuda") and torch.cuda.is_available():
        return storage.cuda(torch.cuda.current_device())
    return None


def _deserialize(data):
    # broadcast_object/allgather_object carry any picklable object, as
    # Horovod's do (cloudpickle there): torch >= 2.6 defaults torch.load to
    # weights_only=True, which refuses everything but tensors and plain
    # containers. The bytes come from a rank of this same job.
    return torch.load(io.BytesIO(data), map_location=_to_this_rank, weights_only=False)


def broadcast_object(obj, root_rank=0, name=None, process_set=mpi_ops.global_process_set):
    """Returns root_rank's ``obj`` on every rank (any picklable object)."""
    return _objects.broadcast_object(obj, root_rank, name or "broadcast_object",
                                     _ps.ident(process_set, "broadcast_object"),
                                     dumps=_serialize, loads=_deserialize)


def allgather_object(obj, name=None, process_set=mpi_ops.global_process_set):
    """Returns the list of every rank's ``obj``, in rank order."""
    return _objects.allgather_object(obj, name or "allgather_object",
                                     _ps.ident(process_set, "allgather_object"),
                                     dumps=_serialize, loads=_deserialize)

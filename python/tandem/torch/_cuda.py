"""CUDA tensors as the engine sees them: a device index, a device pointer,
the caller's current stream, and results copied out of engine memory.

The engine orders a GPU operation on the stream set with
``tandem_set_device_stream`` just before the enqueue (per thread): it starts
after the work already queued there, and that stream waits for the result.
torch's "current stream" is per thread and per device, so the binding reads
it for the tensor's device on the enqueuing thread (for DistributedOptimizer
that is autograd's thread for the device, whose current stream is the one
the gradient was produced on).

Results sized by negotiation (allgather, alltoall, reducescatter) live in
device memory the engine owns; ``tandem_handle_copy_output`` copies them with
a plain ``cudaMemcpy``, which runs on the legacy default stream. torch's side
streams are created non-blocking, so they are not ordered with that stream by
themselves: when the current stream is not the default one, the default
stream first waits for the current one (the output's memory may have been
freed by work still queued there), and the current stream waits for the copy
before the result is used. Events only; the host does not block.

Nothing here runs without CUDA: CPU tensors never reach these functions.
"""

import torch


def device_index(tensor):
    """The CUDA device index of a CUDA tensor (torch always sets it)."""
    index = tensor.device.index
    return torch.cuda.current_device() if index is None else index


def current_stream(tensor):
    """The cudaStream_t (an int; 0 is the legacy default stream) of the
    current stream of the tensor's device on this thread."""
    return torch.cuda.current_stream(tensor.device).cuda_stream


def empty(shape, dtype, device):
    """A result tensor on ``device`` (allocated on the current stream)."""
    return torch.empty(shape, dtype=dtype, device=device)


def _streams(device):
    current = torch.cuda.current_stream(device)
    default = torch.cuda.default_stream(device)
    return current, default


def before_result_copy(device):
    """The legacy stream (where the engine's cudaMemcpy runs) waits for the
    work already queued on the current stream."""
    current, default = _streams(device)
    if current != default:
        default.wait_stream(current)


def after_result_copy(device):
    """The current stream waits for the engine's copies (queued on the
    legacy stream) before anything reads the result."""
    current, default = _streams(device)
    if current != default:
        current.wait_stream(default)

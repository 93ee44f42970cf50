"""Batch normalisation with statistics over the whole global batch.

In training, each rank computes per-channel sum, sum of squares and count of
its local batch; one differentiable allreduce (Sum) combines them, and every
rank normalises with the global mean and variance. The allreduce's backward is
an allreduce of the incoming gradient, so autograd itself yields the
cross-rank terms of the batch-norm gradient: no hand-written backward.
Statistics are accumulated in float32 at least (float64 inputs stay float64).
"""

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from tandem.torch import mpi_ops


class SyncBatchNorm(_BatchNorm):
    """Drop-in for torch.nn.BatchNormNd whose training statistics span every
    rank of ``process_set``. Every rank must call forward the same number of
    times (it is a collective)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=mpi_ops.global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):  # noqa: A002 (torch's parameter name)
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got %dD input)" % input.dim())

    def forward(self, input):  # noqa: A002 (torch's parameter name)
        self._check_input_dim(input)
        if not self.training and self.track_running_stats:
            return torch.nn.functional.batch_norm(
                input, self.running_mean, self.running_var, self.weight, self.bias, False,
                0.0, self.eps)
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        momentum = self.momentum
        if momentum is None:  # cumulative moving average, as torch does
            momentum = 1.0 / float(self.num_batches_tracked)

        acc = torch.float64 if input.dtype == torch.float64 else torch.float32
        channels = input.shape[1]
        dims = [0] + list(range(2, input.dim()))
        x = input.to(acc)
        # On the input's device: one allreduce of one tensor, on the GPU path
        # for CUDA inputs.
        count = torch.full((1,), float(input.numel() // channels), dtype=acc,
                           device=input.device)
        local = torch.cat([x.sum(dims), (x * x).sum(dims), count])
        total = mpi_ops.allreduce(local, op=mpi_ops.Sum, name=None,
                                  process_set=self.process_set)
        n = total[2 * channels]
        mean = total[:channels] / n
        var = total[channels:2 * channels] / n - mean * mean

        if self.training and self.track_running_stats:
            with torch.no_grad():
                unbiased = var * (n / (n - 1)) if n > 1 else var
                self.running_mean.mul_(1 - momentum).add_(mean.to(self.running_mean.dtype),
                                                          alpha=momentum)
                self.running_var.mul_(1 - momentum).add_(unbiased.to(self.running_var.dtype),
                                                         alpha=momentum)
        shape = [1, channels] + [1] * (input.dim() - 2)
        out = (x - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            out = out * self.weight.to(acc).view(shape) + self.bias.to(acc).view(shape)
        return out.to(input.dtype)

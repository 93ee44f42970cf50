#!/usr/bin/python3
"""A convolutional MNIST classifier trained with Horovod's PyTorch API.

Written exactly as a Horovod user would: `import horovod.torch as hvd`,
DistributedSampler for the shards, DistributedOptimizer, broadcast of the
initial parameters and optimizer state. The data are synthetic MNIST-shaped
images generated here (no download): each class has a fixed random template
and every image is its template plus noise, so the network has something to
learn and the loss goes down.

    srun -N 2 -n 4 --horovod=on /usr/bin/python3 examples/pytorch_mnist.py
    tandem-run -np 4 /usr/bin/python3 examples/pytorch_mnist.py   # one host
    /usr/bin/python3 examples/pytorch_mnist.py                    # one process
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data
import torch.utils.data.distributed

import horovod.torch as hvd


def parse_args():
    p = argparse.ArgumentParser(description="Horovod-style MNIST example (synthetic data)")
    p.add_argument("--batch-size", type=int, default=64, help="per-rank batch size")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=0,
                   help="stop after this many steps in total (0: run every epoch fully)")
    p.add_argument("--lr", type=float, default=0.02, help="learning rate for one rank")
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--dropout", type=float, default=0.25,
                   help="dropout probability (0 makes a run deterministic)")
    p.add_argument("--num-samples", type=int, default=16384)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--no-scale-lr", action="store_true",
                   help="do not multiply the learning rate by the number of ranks")
    p.add_argument("--fp16-allreduce", action="store_true")
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--save", default="", help="rank 0 saves the final state_dict here")
    return p.parse_args()


class SyntheticMNIST(torch.utils.data.Dataset):
    """28x28 one-channel images of 10 classes: template + noise. The same seed
    gives the same data set in every process."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        # Binary "strokes" per class, then Gaussian noise of the same scale.
        templates = (torch.rand(10, 1, 28, 28, generator=g) > 0.5).float()
        self.labels = torch.randint(0, 10, (n,), generator=g)
        noise = torch.randn(n, 1, 28, 28, generator=g)
        self.images = (templates[self.labels] - 0.5) * 2 + noise

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


class Net(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d(p=dropout)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.dropout = dropout

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # ranks share the node's cores

    dataset = SyntheticMNIST(args.num_samples, args.seed)
    sampler = torch.utils.data.distributed.DistributedSampler(
        dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = Net(args.dropout)
    lr = args.lr if args.no_scale_lr else args.lr * hvd.size()
    optimizer = optim.SGD(model.parameters(), lr=lr, momentum=args.momentum)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)

    step, images, start = 0, 0, time.perf_counter()
    done = False
    for epoch in range(1, args.epochs + 1):
        model.train()
        sampler.set_epoch(epoch)
        for batch, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            step += 1
            images += len(data)
            if step % args.log_interval == 0:
                avg = hvd.allreduce(loss.detach(), name="avg_loss")
                if hvd.rank() == 0:
                    print("epoch %d step %4d  loss %.4f" % (epoch, step, avg.item()),
                          flush=True)
            if args.steps and step >= args.steps:
                done = True
                break
        if done:
            break
    elapsed = time.perf_counter() - start
    total = hvd.allreduce(torch.tensor(float(images)), op=hvd.Sum, name="images").item()
    if hvd.rank() == 0:
        print("trained %d steps on %d ranks: %.1f images/sec in total, %.1f per rank"
              % (step, hvd.size(), total / elapsed, total / elapsed / hvd.size()), flush=True)
        if args.save:
            torch.save(model.state_dict(), args.save)


if __name__ == "__main__":
    main()

"""An elastic torch training script for the fault drills (hvd.elastic.run,
TorchState with a model, an optimizer, an ElasticSampler and counters).

    python elastic_torch.py OUT_DIR [--steps N] [--commit-every K] [--fault KIND:RANK:STEP]

Every rank trains on the same batch at every step (a fixed tensor picked by
the step number), so that the averaged gradient is the same whatever the
number of ranks: a run that loses ranks and goes on from its last commit
ends with the parameters of a run without faults (the drills' oracle).
Beside it, each rank draws its share of a dataset of indices from an
ElasticSampler and writes what it drew to a ledger, so that the drills can
check that every sample was processed once per epoch outside the steps a
failure rolled back.

Files in OUT_DIR (START = the rank at the first init, i.e. the task):
  pid.START           this process's pid (written at start)
  progress.START      "<step> <rank> <size> <generation count>" after every step
  ledger.START.jsonl  {"gen", "rank", "size", "epoch", "step", "indices", "t"} per step,
                      and {"event": "start"|"reset"|"restored", ...} lines
  final.START.json    at the end: {"params", "rank", "size", "rendezvous", "steps"}

--fault KIND:RANK:STEP makes the process that started as RANK fail when it
is about to run STEP: "kill" (SIGKILL itself), "raise" (an exception out of
the script), "exit" (os._exit(3)). --step-sleep slows every step (seconds).
"""

import argparse
import json
import os
import signal
import time

import torch

import horovod.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--commit-every", type=int, default=2)
parser.add_argument("--samples", type=int, default=96)
parser.add_argument("--batch", type=int, default=2)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--fault", default="")
args = parser.parse_args()

hvd.init()
START = hvd.rank()
out = args.out
with open(os.path.join(out, "pid.%d" % START), "w") as f:
    f.write(str(os.getpid()))
ledger = open(os.path.join(out, "ledger.%d.jsonl" % START), "a", buffering=1)


def log(**record):
    record["t"] = time.time()
    ledger.write(json.dumps(record) + "\n")


fault = None
if args.fault:
    kind, rank, step = args.fault.split(":")
    fault = (kind, int(rank), int(step))

torch.manual_seed(1234)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
gen = torch.Generator().manual_seed(99)
X = torch.randn(64, 8, generator=gen)
Y = torch.randn(64, 1, generator=gen)
sampler = hvd.elastic.ElasticSampler(list(range(args.samples)), shuffle=True, seed=7)
state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, step=0, rendezvous=0)
generation = [0]
log(event="start", rank=hvd.rank(), size=hvd.size(), pid=os.getpid())


def on_reset():
    generation[0] += 1
    log(event="reset", rank=hvd.rank(), size=hvd.size())


state.register_reset_callbacks([on_reset])


def maybe_fail(step):
    if fault is None or fault[1] != START or fault[2] != step:
        return
    log(event="fault", kind=fault[0], step=step)
    if fault[0] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault[0] == "exit":
        os._exit(3)
    raise RuntimeError("injected failure at step %d on start rank %d" % (step, START))


@hvd.elastic.run
def train(state):
    state.rendezvous += 1  # as Horovod's test mains count generations (after the sync)
    log(event="restored", step=state.step, rank=hvd.rank(), size=hvd.size(),
        epoch=state.sampler.epoch, processed=state.sampler.processed_num)
    indices = list(iter(state.sampler))
    pos = 0
    while state.step < args.steps:
        step = state.step
        maybe_fail(step)
        if pos >= len(indices):
            state.sampler.set_epoch(state.sampler.epoch + 1)
            indices = list(iter(state.sampler))
            pos = 0
        # The epoch's last batch may be short: the same length on every
        # rank, as the sampler pads every rank's share to one length.
        drawn = indices[pos:pos + args.batch]
        pos += len(drawn)
        i = (step * 4) % X.shape[0]
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(X[i:i + 4]), Y[i:i + 4])
        loss.backward()
        optimizer.step()
        state.sampler.record_batch(step, len(drawn))
        log(gen=generation[0], rank=hvd.rank(), size=hvd.size(), epoch=state.sampler.epoch,
            step=step, indices=drawn)
        state.step += 1
        with open(os.path.join(out, "progress.%d" % START), "w") as f:
            f.write("%d %d %d %d\n" % (state.step, hvd.rank(), hvd.size(), generation[0]))
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if state.step % args.commit_every == 0:
            state.commit()


train(state)
params = [p.detach().double().flatten().tolist() for p in model.parameters()]
with open(os.path.join(out, "final.%d.json" % START), "w") as f:
    json.dump({"params": params, "rank": hvd.rank(), "size": hvd.size(),
               "rendezvous": state.rendezvous, "steps": state.step}, f)
print("elastic_torch done: start rank %d rank %d size %d rendezvous %d" %
      (START, hvd.rank(), hvd.size(), state.rendezvous), flush=True)

"""An elastic Keras training script for the fault drills: KerasState,
Horovod's CommitStateCallback, UpdateBatchStateCallback and
UpdateEpochStateCallback around model.fit in hvd.elastic.run. The Keras is
``tf.keras``, as a horovod.tensorflow.keras script has it: Keras 3, or
Keras 2 (TF 2.15's, or tf_keras with TF_USE_LEGACY_KERAS=1).

    python elastic_keras.py OUT_DIR [--epochs E] [--steps-per-epoch S] [--fault KIND:RANK:STEP]

Every rank fits the same batch at every step, so the parameters depend only
on the number of steps taken: a job that loses ranks and goes on from its
last commit ends with the parameters of an unfaulted run. Writes the same
files as elastic_torch.py (pid, progress, final; the ledger has one record
per step, without sampler indices).
"""

import argparse
import json
import os
import signal
import time

import numpy as np
from tensorflow import keras

import horovod.tensorflow.keras as hvd

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--epochs", type=int, default=4)
parser.add_argument("--steps-per-epoch", type=int, default=10)
# Commits at epoch ends (CommitStateCallback commits there too): fit() (Keras
# 3, and Keras 2 on TF 2) fixes the steps of every epoch before any callback
# runs, so UpdateBatchStateCallback cannot shorten the epoch that resumes
# after a mid-epoch commit (docs/elastic.md); from an epoch end the resumed
# run takes exactly the unfaulted run's steps.
parser.add_argument("--batches-per-commit", type=int, default=0)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--fault", default="")
args = parser.parse_args()

hvd.init()
START = hvd.rank()
out = args.out
with open(os.path.join(out, "pid.%d" % START), "w") as f:
    f.write(str(os.getpid()))
ledger = open(os.path.join(out, "ledger.%d.jsonl" % START), "a", buffering=1)

keras.utils.set_random_seed(1234)
rng = np.random.default_rng(99)
x = rng.standard_normal((8, 6)).astype("float32")
y = rng.standard_normal((8, 1)).astype("float32")
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="tanh"),
                          keras.layers.Dense(1)])
optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.05, momentum=0.9))
model.compile(loss="mse", optimizer=optimizer)
optimizer.build(model.trainable_variables)  # its variables must exist for the state

fault = None
if args.fault:
    kind, rank, step = args.fault.split(":")
    fault = (kind, int(rank), int(step))


def dataset():
    # The same batch at every step, however the fit is cut and restarted.
    while True:
        yield x, y


state = hvd.elastic.KerasState(model, optimizer, batch=0, epoch=0, rendezvous=0)


class Drill(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.step = state.epoch * args.steps_per_epoch + batch
        if fault and fault[1] == START and fault[2] == self.step:
            ledger.write(json.dumps({"event": "fault", "step": self.step, "t": time.time()}) + "\n")
            if fault[0] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("injected failure at step %d on start rank %d" % (self.step, START))

    def on_train_batch_end(self, batch, logs=None):
        ledger.write(json.dumps({"rank": hvd.rank(), "size": hvd.size(), "step": self.step,
                                 "epoch": state.epoch, "t": time.time()}) + "\n")
        with open(os.path.join(out, "progress.%d" % START), "w") as f:
            f.write("%d %d %d\n" % (self.step + 1, hvd.rank(), hvd.size()))
        if args.step_sleep:
            time.sleep(args.step_sleep)


callbacks = [Drill(), hvd.elastic.UpdateEpochStateCallback(state),
             hvd.elastic.UpdateBatchStateCallback(state),
             hvd.elastic.CommitStateCallback(state, args.batches_per_commit or args.steps_per_epoch)]


@hvd.elastic.run
def train(state):
    state.rendezvous += 1
    state.model.fit(dataset(), steps_per_epoch=args.steps_per_epoch,
                    epochs=args.epochs - state.epoch, callbacks=callbacks, verbose=0)


train(state)
params = [np.asarray(v, dtype=np.float64).flatten().tolist() for v in model.get_weights()]
with open(os.path.join(out, "final.%d.json" % START), "w") as f:
    json.dump({"params": params, "rank": hvd.rank(), "size": hvd.size(),
               "rendezvous": state.rendezvous, "steps": args.epochs * args.steps_per_epoch}, f)
print("elastic_keras done: start rank %d rank %d size %d rendezvous %d" %
      (START, hvd.rank(), hvd.size(), state.rendezvous), flush=True)

"""What Horovod's Keras API does the same way on Keras 3 (tandem.keras) and
Keras 2 (tandem.keras2), written once; Horovod keeps the same kind of code in
horovod/_keras for its tf.keras and keras modules.

Nothing here imports a Keras: tandem.keras refuses Keras 2 at import and
tandem.keras2 refuses Keras 3, so neither can be the home of what both use.
Each module takes what differs between the two Keras as an argument (the
``keras`` module, how to read a variable into numpy, which
broadcast_variables) or leaves it to a method the Keras-specific class
defines; the differences that remain are written beside that method, in
tandem/keras/ and tandem/keras2/.

* ``elastic``: the State of a Keras model and optimizer, and the mixins of
  CommitStateCallback, UpdateBatchStateCallback, UpdateEpochStateCallback.
* ``callbacks``: metric averaging and the learning-rate schedule/warmup
  mixins of the callbacks.
* ``optimizer``: DistributedOptimizer's argument checks,
  PartialDistributedOptimizer's local layers.
"""


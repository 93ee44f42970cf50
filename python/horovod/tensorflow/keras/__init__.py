"""``horovod.tensorflow.keras`` on Tandem: tandem.keras, for Keras 3.

Horovod's tf.keras module (TF <= 2.15, Keras 2) maps onto Keras 3 here; with
TF >= 2.16 ``tf.keras`` *is* Keras 3, so this is the same module as
``horovod.keras``. Importing it (as importing tandem.keras) lets ``model.compile`` accept
Keras 2's ``experimental_run_tf_function`` (dropped), as Horovod's examples
pass it.
Differences from Horovod: docs/keras.md.
"""

from tandem.keras import *  # noqa: F403
from tandem.keras import __all__  # noqa: F401
from horovod.tensorflow.keras import callbacks  # noqa: F401 (hvd.callbacks.*)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

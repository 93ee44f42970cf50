"""``horovod.keras`` on Tandem: tandem.keras, for Keras 3.

In Horovod this module served standalone Keras 2 (``import keras`` with its
own TF1-style session), beside ``horovod.tensorflow.keras`` for tf.keras.
Keras 3 is one package whichever way it is imported (``tf.keras`` is
``keras`` from TF 2.16 on), so both names are the same module here, and it
also runs under the torch backend (KERAS_BACKEND=torch) without TensorFlow.
Importing it (as importing tandem.keras) lets ``model.compile`` accept
Keras 2's ``experimental_run_tf_function`` (dropped). Differences:
docs/keras.md.
"""

from tandem.keras import *  # noqa: F403
from tandem.keras import __all__  # noqa: F401
from horovod.keras import callbacks  # noqa: F401 (hvd.callbacks.*)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

"""``horovod.keras`` on Tandem: tandem.keras (Keras 3) or tandem.keras2 (Keras 2).

In Horovod this module served standalone Keras 2 (``import keras``),
beside ``horovod.tensorflow.keras`` for tf.keras. Here it serves the Keras
this process uses (tandem._which_keras): Keras 2 when ``keras`` is 2.x
(TensorFlow <= 2.15) or when ``TF_USE_LEGACY_KERAS=1`` selects ``tf_keras``;
otherwise Keras 3, one package whichever way it is imported, on the
TensorFlow or the torch backend (which then needs no TensorFlow). Importing
the Keras 3 module lets ``model.compile`` accept Keras 2's
``experimental_run_tf_function`` (dropped). Differences: docs/keras.md.
"""

from tandem._which_keras import keras2 as _keras2

if _keras2() is not None:
    from tandem.keras2 import *  # noqa: F403
    from tandem.keras2 import __all__
else:
    from tandem.keras import *  # noqa: F403
    from tandem.keras import __all__  # noqa: F401
from horovod.keras import callbacks  # noqa: F401 (hvd.callbacks.*)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

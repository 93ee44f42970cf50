"""``horovod.tensorflow.keras`` on Tandem: the Keras of ``tf.keras``.

Horovod's tf.keras module served Keras 2 (TF <= 2.15). Here it is
tandem.keras2 when ``tf.keras`` is Keras 2 (TensorFlow <= 2.15, or
``TF_USE_LEGACY_KERAS=1`` with ``tf_keras`` on 2.16+), and tandem.keras
(Keras 3, the same module as ``horovod.keras``) otherwise; importing the
latter lets ``model.compile`` accept Keras 2's
``experimental_run_tf_function`` (dropped), as Horovod's examples pass it.
Differences from Horovod: docs/keras.md.
"""

from tandem._which_keras import keras2 as _keras2

if _keras2() is not None:
    from tandem.keras2 import *  # noqa: F403
    from tandem.keras2 import __all__
else:
    from tandem.keras import *  # noqa: F403
    from tandem.keras import __all__  # noqa: F401
from horovod.tensorflow.keras import callbacks  # noqa: F401 (hvd.callbacks.*)


def __getattr__(name):  # PEP 562: hvd.elastic is imported on first use
    if name == "elastic":
        import importlib
        return importlib.import_module(__name__ + ".elastic")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

"""Which Keras a Horovod Keras import serves in this process: Keras 2 or 3.

``horovod.tensorflow.keras`` served ``tf.keras`` and ``horovod.keras`` the
standalone ``keras`` package; both were Keras 2 in Horovod. Here:

* ``TF_USE_LEGACY_KERAS`` set to 1/true/True (TensorFlow's own switch, read
  the way TensorFlow reads it) and ``tf_keras`` installed: Keras 2 as
  ``tf_keras`` (``tf.keras`` is ``tf_keras`` then, on TF 2.16 and later).
* otherwise ``keras`` itself: Keras 2 when it is 2.x (TensorFlow up to 2.15,
  where ``tf.keras`` is that package), else Keras 3 (tandem.keras).

Nothing here imports TensorFlow: Keras 3 on the torch backend must not need
it. The answer is computed once per process; a program mixes no Keras.
"""

import importlib
import importlib.util
import os

_LEGACY_VALUES = ("1", "true", "True")
_cache = []


def keras2():
    """The Keras 2 module (``tf_keras`` or a 2.x ``keras``) the Horovod Keras
    modules serve, or None when that is Keras 3."""
    if not _cache:
        _cache.append(_find())
    return _cache[0]


def _find():
    if (os.environ.get("TF_USE_LEGACY_KERAS") in _LEGACY_VALUES
            and importlib.util.find_spec("tf_keras") is not None):
        return importlib.import_module("tf_keras")
    import keras
    if str(getattr(keras, "__version__", "")).startswith("2."):
        return keras
    return None

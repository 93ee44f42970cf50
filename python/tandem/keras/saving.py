"""hvd.load_model: a saved Keras 3 model whose optimizer comes back distributed.

Keras 3 resolves a built-in optimizer from its module path, never from
``custom_objects``, so Horovod's trick (every optimizer class registered under
its name, wrapped) cannot reach it. Instead the model is loaded as Keras
loads it (optimizer variables restored), then its optimizer is made
distributed in place (``optimizer.wrap_in_place``), keeping that state.

``custom_optimizers`` (classes) are registered under their names so Keras
can rebuild them, then wrapped the same way. ``custom_objects`` are passed to
Keras; an entry that names the saved optimizer and is a factory function
rather than a class (Horovod's documented
``{'MyOpt': lambda **kw: hvd.DistributedOptimizer(MyOpt(**kw))}``) is called
with the saved optimizer config, which Keras 3 would otherwise hand back as
the function itself.
"""

import json
import zipfile

import keras

from tandem import errors
from tandem.keras.compression import Compression
from tandem.keras.optimizer import is_distributed, wrap_in_place


def _saved_optimizer_names(filepath):
    """The class and registered names of the optimizer stored in a .keras or
    legacy .h5 file (empty when there is none or the format is unknown)."""
    path = str(filepath)
    config = None
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                model = json.loads(archive.read("config.json"))
            config = (model.get("compile_config") or {}).get("optimizer")
        elif path.endswith((".h5", ".hdf5")):
            import h5py
            with h5py.File(path, "r") as handle:
                training = handle.attrs.get("training_config")
            if training is not None:
                if isinstance(training, bytes):
                    training = training.decode()
                config = json.loads(training).get("optimizer_config")
    except (OSError, KeyError, ValueError):
        return set()
    if not isinstance(config, dict):
        return set()
    return {n for n in (config.get("class_name"), config.get("registered_name")) if n}


def _factory_class(name, factory):
    """A class whose from_config calls ``factory(**config)``: how Keras 3
    deserializes it."""

    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = keras.saving.deserialize_keras_object(
                config["learning_rate"], custom_objects=custom_objects)
        return factory(**config)

    return type(name, (), {"from_config": classmethod(from_config)})


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False):
    """Loads a Keras 3 model (.keras, or legacy .h5) with its optimizer made a
    DistributedOptimizer (state included), as horovod.keras.load_model."""
    if legacy_opts:
        raise errors.make("TANDEM_ERR_UNSUPPORTED",
                          "load_model(legacy_opts=True): Keras 3 has no "
                          "keras.optimizers.legacy; load with legacy_opts=False")
    objects = {}
    for cls in custom_optimizers or ():
        objects[cls.__name__] = cls
    if custom_objects:
        names = _saved_optimizer_names(filepath)
        for key, value in custom_objects.items():
            if key in names and callable(value) and not isinstance(value, type):
                value = _factory_class(key, value)
            objects[key] = value
    model = keras.models.load_model(filepath, custom_objects=objects)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not is_distributed(optimizer):
        wrap_in_place(optimizer, compression)
        if keras.backend.backend() == "tensorflow" and getattr(model, "_jit_compile", False):
            # Saved from a run with XLA (a GPU and no DistributedOptimizer):
            # Tandem's collective cannot be compiled by XLA (see _compat.py).
            model.jit_compile = False
            model.train_function = None
    return model

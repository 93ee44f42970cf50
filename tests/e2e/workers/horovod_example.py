"""Runs one of Horovod's example scripts, read from a Horovod checkout and not
changed, for a few steps: ``horovod_example.py [options] SCRIPT [ARGS...]``.

What the scripts cannot be told from their command line, and so is set
here, before ``runpy`` runs the file as ``__main__`` (each is printed):

* ``--max-steps N``: ``tensorflow2_mnist.py`` trains ``10000 // size``
  steps and ``tensorflow2_keras_mnist.py`` 24 epochs of ``500 // size``,
  with no flag for either: ``tf.data.Dataset.take`` and Keras's ``fit``
  take at most N steps (and ``--max-epochs`` epochs).
* the local MNIST: ``keras.datasets.mnist.load_data`` finds the file under
  ``$HOME/.keras/datasets`` (the test writes an MNIST-shaped one there) but
  checks it against the real file's SHA-256 and, failing that, downloads,
  which this machine cannot; Keras's ``validate_file`` answers yes for a
  file under that folder instead.
* ``--tf1-names``: ``keras_mnist_advanced.py`` is TF1 code
  (``tf.ConfigProto``, ``tf.Session``, ``K.set_session``) that no
  TensorFlow 2 runs, Horovod's own build on TF 2.15 included; the names
  are bound to ``tf.compat.v1``'s.
* ``--keras-is-tf-keras``: a Keras 2 script that imports ``keras`` on TF
  2.16+, where ``keras`` is Keras 3 and Keras 2 is ``tf_keras``: ``keras``
  and ``keras.*`` are made to name ``tf_keras``'s modules (what a user
  would do with ``import tf_keras as keras``).
"""

import argparse
import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys


def say(what):
    print("horovod_example: %s" % what, flush=True)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``keras.X`` is ``tf_keras.X`` (the same module objects)."""

    def find_spec(self, name, path=None, target=None):
        if name == "keras" or name.startswith("keras."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("tf_keras" + spec.name[len("keras"):])

    def exec_module(self, module):
        pass


def alias_keras_to_tf_keras():
    for name in [n for n in sys.modules if n == "keras" or n.startswith("keras.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Alias())
    import keras
    say("keras is tf_keras %s" % keras.__version__)


def tf1_names():
    import tensorflow as tf
    tf.ConfigProto = tf.compat.v1.ConfigProto
    tf.Session = tf.compat.v1.Session
    import keras
    if not hasattr(keras.backend, "set_session"):
        keras.backend.set_session = tf.compat.v1.keras.backend.set_session
    say("tf.ConfigProto, tf.Session, keras.backend.set_session bound to tf.compat.v1's")


def local_datasets():
    """Keras's hash check accepts files under $HOME/.keras/datasets."""
    import tensorflow as tf
    folder = os.path.join(os.path.expanduser("~"), ".keras", "datasets")
    modules = []
    for name in ("keras.src.utils.file_utils", "keras.src.utils.data_utils",
                 "tf_keras.src.utils.data_utils"):
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            continue
    for module in modules:
        original = getattr(module, "validate_file", None)
        if original is None:
            continue

        def validate_file(fpath, file_hash, algorithm="auto", chunk_size=65535,
                          _original=original):
            if os.path.dirname(os.path.abspath(fpath)) == folder:
                return True
            return _original(fpath, file_hash, algorithm, chunk_size)
        module.validate_file = validate_file
    del tf
    say("datasets read from %s" % folder)


def cap_steps(max_steps, max_epochs):
    import tensorflow as tf
    take = tf.data.Dataset.take

    def capped_take(self, count, name=None):
        return take(self, min(int(count), max_steps), name=name)
    tf.data.Dataset.take = capped_take
    model_class = tf.keras.Model
    for method in ("fit", "fit_generator"):
        original = getattr(model_class, method, None)
        if original is None:
            continue

        def capped(self, *args, _original=original, **kwargs):
            kwargs["epochs"] = min(kwargs.get("epochs", 1), max_epochs)
            for key in ("steps_per_epoch", "validation_steps"):
                if kwargs.get(key):
                    kwargs[key] = min(kwargs[key], max_steps)
            return _original(self, *args, **kwargs)
        setattr(model_class, method, capped)
    say("at most %d steps, %d epochs" % (max_steps, max_epochs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=0)
    parser.add_argument("--max-epochs", type=int, default=2)
    parser.add_argument("--tf1-names", action="store_true")
    parser.add_argument("--keras-is-tf-keras", action="store_true")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if options.keras_is_tf_keras:
        alias_keras_to_tf_keras()
    local_datasets()
    if options.tf1_names:
        tf1_names()
    if options.max_steps:
        cap_steps(options.max_steps, options.max_epochs)
    sys.argv = [options.script] + options.args
    runpy.run_path(options.script, run_name="__main__")
    say("done")


if __name__ == "__main__":
    main()

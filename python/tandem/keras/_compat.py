"""Keras 2 call forms that Horovod-era scripts use and Keras 3 refuses, made
to work again by the ``horovod.*.keras`` shims (not by tandem.keras itself).

* ``model.compile(..., experimental_run_tf_function=False)``: Horovod's TF2
  examples pass it (TF 2.0/2.1 needed it for DistributedOptimizer); tf.keras
  2.2-2.15 accepted and ignored it; Keras 3's compile has no such argument
  and raises TypeError. The shims accept it and drop it. Nothing else is
  changed: Keras 3's other refusals (``lr=`` in optimizer constructors,
  ``fit_generator``, ``K.set_session``) are the script's to fix, see
  docs/keras.md.
"""

import functools

_DROPPED = ("experimental_run_tf_function",)
_patched = []


def accept_keras2_compile_arguments():
    """Idempotent. Patches keras's Trainer.compile (the one every Keras 3
    model inherits) so that Keras's own check for an overridden compile in
    compile_from_config still sees the same function on Model and Trainer."""
    if _patched:
        return
    from keras.src.trainers import trainer
    original = trainer.Trainer.compile

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # noqa: A001 - Keras's name
        for key in _DROPPED:
            kwargs.pop(key, None)
        return original(self, *args, **kwargs)

    compile.__tandem_original__ = original
    trainer.Trainer.compile = compile
    _patched.append(original)

"""What ``model.compile`` must know about a DistributedOptimizer, and the
Keras 2 argument Horovod's examples pass, installed by ``import tandem.keras``
(hence also by ``horovod.keras`` and ``horovod.tensorflow.keras``).

Keras 3 has no hook for an optimizer to say how the train step may be
compiled, so Keras's ``Trainer.compile`` (the one every Keras 3 model
inherits) is wrapped once. It changes nothing for a model compiled with any
other optimizer, except that the Keras 2 argument below is accepted:

* ``jit_compile``: Keras's default ``"auto"`` turns XLA on under TensorFlow
  whenever a GPU is visible, and XLA cannot compile Tandem's collective (a
  Python callback into the engine, see tandem/tensorflow/_bridge.py). With a
  DistributedOptimizer ``"auto"`` therefore means False (as it already does
  on CPU-only machines and under tf.distribute), and an explicit
  ``jit_compile=True`` is refused right here with UnsupportedError, not deep
  in the first step's trace. Under the torch backend ``jit_compile=True``
  means torch.compile of the train step, which was seen to train each rank
  on its own gradients (the reduction did not reach the update): refused
  the same way.
* mixed precision: under the ``mixed_float16`` policy Keras wraps the
  optimizer in a LossScaleOptimizer, which skips a step when the gradients
  are not finite, each rank on its own gradients; a rank that skips would
  leave the others waiting in the reduction (or pair its next step with
  their current one). A DistributedOptimizer is instead rebuilt around the
  LossScaleOptimizer (optimizer.loss_scaled), so the check runs on the
  reduced gradients, the same on every rank; a user's
  ``LossScaleOptimizer(DistributedOptimizer(...))`` is turned around the
  same way.
* ``experimental_run_tf_function``: Horovod's TF2 Keras examples pass
  ``experimental_run_tf_function=False`` (TF 2.0/2.1 needed it);
  tf.keras 2.2-2.15 accepted and ignored it; Keras 3's compile raises
  TypeError. It is accepted and dropped. Keras 3's other refusals of Keras 2
  code (``lr=`` in optimizer constructors, ``fit_generator``,
  ``K.set_session``) are the script's to fix (docs/keras.md).

Keras's own compile_from_config checks that ``type(model).compile`` is
``Trainer.compile`` (to detect a user override); the wrapper replaces the
attribute on Trainer itself, so that check still holds.
"""

import functools
import inspect

from tandem import errors

_DROPPED = ("experimental_run_tf_function",)
_installed = []


def _distributed(optimizer):
    from tandem.keras.optimizer import is_distributed
    inner = getattr(optimizer, "inner_optimizer", None)  # LossScaleOptimizer
    return is_distributed(optimizer) or (inner is not None and is_distributed(inner))


def install():
    """Idempotent."""
    if _installed:
        return
    import keras
    from keras.src.trainers import trainer
    original = trainer.Trainer.compile
    signature = inspect.signature(original)

    @functools.wraps(original)
    def compile(self, *args, **kwargs):  # noqa: A001 - Keras's name
        for key in _DROPPED:
            kwargs.pop(key, None)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        optimizer = bound.arguments["optimizer"]
        if _distributed(optimizer):
            from tandem.keras.optimizer import is_distributed, loss_scaled
            scale_class = keras.optimizers.LossScaleOptimizer
            if isinstance(optimizer, scale_class) and not is_distributed(optimizer):
                # LossScaleOptimizer(DistributedOptimizer(...)), the order that
                # checks each rank's own gradients: turned around.
                bound.arguments["optimizer"] = loss_scaled(
                    optimizer.inner_optimizer, optimizer.initial_scale,
                    optimizer.dynamic_growth_steps)
            elif (not isinstance(optimizer, scale_class) and bound.arguments["auto_scale_loss"]
                    and self.dtype_policy.name == "mixed_float16"):
                bound.arguments["optimizer"] = loss_scaled(optimizer)
            jit = bound.arguments["jit_compile"]
            if jit == "auto":
                bound.arguments["jit_compile"] = False
            elif jit:
                raise errors.make(
                    "TANDEM_ERR_UNSUPPORTED",
                    "model.compile(jit_compile=True) with a DistributedOptimizer: %s cannot "
                    "compile Tandem's collective (a call into the engine from Python, nothing "
                    "compiled against the framework). Use jit_compile=False (the default "
                    "\"auto\" means False with a DistributedOptimizer)"
                    % ("torch.compile" if keras.backend.backend() == "torch" else "XLA"))
        return original(*bound.args, **bound.kwargs)

    compile.__tandem_original__ = original
    trainer.Trainer.compile = compile
    _installed.append(original)

"""What DistributedOptimizer's Keras modules share: Horovod's checks of its
arguments and PartialDistributedOptimizer (horovod/tensorflow/keras and
horovod/keras do both the same way). Making the distributed optimizer itself
differs between the Keras: Keras 3 reduces in ``apply`` through the
backend's frontend (tandem/keras/optimizer.py), Keras 2 in the gradient
hooks of its two optimizer families through tandem.tensorflow
(tandem/keras2/optimizer.py); each checks the optimizer's type itself.
"""

from tandem import _ops


def check_arguments(op, gradient_predivide_factor, backward_passes_per_step, groups):
    """Refuses, with ValueError as Horovod does, what DistributedOptimizer
    cannot do: Adasum, ops other than Average and Sum, a predivide factor
    with Sum or not positive, fewer than one backward pass per step, groups
    that are neither a positive number nor a list of lists of variables."""
    if op == _ops.Adasum:
        raise ValueError("op == Adasum is not supported yet with Keras")
    if op not in (_ops.Average, _ops.Sum):
        raise ValueError("op currently only supports Average and Sum")
    if gradient_predivide_factor != 1.0 and op != _ops.Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if gradient_predivide_factor <= 0:
        raise ValueError("gradient_predivide_factor must be positive, got %r"
                         % (gradient_predivide_factor,))
    if int(backward_passes_per_step) < 1:
        raise ValueError("backward_passes_per_step must be at least 1, got %r"
                         % (backward_passes_per_step,))
    if groups is not None:
        if isinstance(groups, bool) or not (isinstance(groups, list) or
                                            (isinstance(groups, int) and groups > 0)):
            raise ValueError("groups should be a non-negative integer or a list of list of "
                             "variables")
        if isinstance(groups, list) and not all(isinstance(g, (list, tuple)) for g in groups):
            raise ValueError("groups should be a non-negative integer or a list of list of "
                             "variables")


def partial_distributed(distributed_optimizer, arguments, layer_class, layer_class_name):
    """PartialDistributedOptimizer: ``distributed_optimizer(**arguments)``
    without ``local_layers``, whose trainable weights are then registered as
    local (their gradients are not reduced). ``arguments``: the caller's,
    by name; ``local_layers`` is one layer, a list of them, or None."""
    arguments = dict(arguments)
    local_layers = arguments.pop("local_layers")
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, layer_class):
        local_layers = [local_layers]
    elif not all(isinstance(layer, layer_class) for layer in local_layers):
        raise ValueError("All local layers must be of %s type." % layer_class_name)
    opt = distributed_optimizer(**arguments)
    for layer in local_layers:
        for var in layer.trainable_weights:
            opt.register_local_var(var)
    return opt

"""What DistributedOptimizer's Keras modules share: PartialDistributedOptimizer
(horovod/tensorflow/keras/__init__.py and horovod/keras/__init__.py make it
the same way). Making the distributed optimizer itself differs between the
Keras: Keras 3 reduces in ``apply`` through the backend's frontend
(tandem/keras/optimizer.py), Keras 2 in the gradient hooks of its two
optimizer families through tandem.tensorflow (tandem/keras2/optimizer.py).
"""


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

"""What every framework frontend means by an operation: reduction ops, the
deprecated ``average=`` and ``num_groups=`` arguments. (Names the engine
pairs operations by: tandem._names.)

Horovod exposes the ops as module constants (``hvd.Sum``, ``hvd.Average``,
...); each frontend re-exports these, so ``hvd.Sum`` is the same value under
``horovod.torch`` and ``horovod.tensorflow``.
"""

import warnings

from tandem import _dtypes, errors

# Values are tandem_op_t's.
Sum = _dtypes.SUM
Average = _dtypes.AVERAGE
Min = _dtypes.MIN
Max = _dtypes.MAX
Product = _dtypes.PRODUCT
Adasum = _dtypes.ADASUM
OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product",
            Adasum: "Adasum"}


def invalid(message):
    """An InvalidArgumentError made on the Python side, before the engine."""
    return errors.make("TANDEM_ERR_INVALID_ARGUMENT", message)


def resolve_op(op, average, what):
    """The op to run from Horovod's (op, average) pair: ``average`` is the
    deprecated boolean; neither given means Average."""
    if average is not None:
        if op is not None:
            raise invalid("%s: the op parameter supersedes average; give only one of them"
                          % what)
        # Horovod's warning, word for word (scripts filter on it).
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed "
                      "in v1.0", DeprecationWarning, stacklevel=3)
        return Average if average else Sum
    if op is None:
        return Average
    if op == Adasum and "reducescatter" in what:
        raise errors.make("TANDEM_ERR_UNSUPPORTED",
                          "%s: Adasum combines whole tensors and has no reduce-scatter (nor "
                          "has Horovod's); use Sum or Average" % what)
    if op not in OP_NAMES:
        raise invalid("%s: op must be one of hvd.Sum, Average, Min, Max, Product, Adasum; "
                      "got %r" % (what, op))
    return op


def check_adasum(size, process_set, global_set, on_gpu=False):
    """Horovod's frontend rules for op=Adasum, with its exceptions and words
    (its users catch NotImplementedError): the global process set only, a
    power-of-two number of ranks. The engine checks the same again."""
    if process_set != global_set:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    if on_gpu:
        raise errors.make("TANDEM_ERR_UNSUPPORTED",
                          "allreduce with Adasum: Tandem runs Adasum on CPU tensors only; "
                          "copy the tensor to the host (tensor.cpu()) for the allreduce")
    if size <= 0 or size & (size - 1):
        raise NotImplementedError("Running Adasum with non-power of 2 ranks is not supported "
                                  "yet.")


def groups_from(num_groups, groups):
    """``groups`` of a DistributedOptimizer or tape from Horovod's pair: the
    deprecated ``num_groups`` (with Horovod's warning, word for word) stands
    in when ``groups`` is not given."""
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be "
                      "removed in v0.23.0.", DeprecationWarning, stacklevel=3)
        if groups is None:
            return num_groups
    return groups

"""What every framework frontend means by an operation: reduction ops, the
deprecated ``average=`` and ``num_groups=`` arguments. (Names the engine
pairs operations by: tandem._names.)

Horovod exposes the ops as module constants (``hvd.Sum``, ``hvd.Average``,
...); each frontend re-exports these, so ``hvd.Sum`` is the same value under
``horovod.torch`` and ``horovod.tensorflow``.
"""

import warnings

from tandem import _dtypes, errors

# Values are tandem_op_t's; Adasum exists only so that scripts naming it get a
# clear error rather than an AttributeError.
Sum = _dtypes.SUM
Average = _dtypes.AVERAGE
Min = _dtypes.MIN
Max = _dtypes.MAX
Product = _dtypes.PRODUCT
Adasum = -1
OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product"}


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
    if op == Adasum:
        raise errors.make("TANDEM_ERR_UNSUPPORTED",
                          "%s: Adasum is not implemented by Tandem; use Average or Sum" % what)
    if op not in OP_NAMES:
        raise invalid("%s: op must be one of hvd.Sum, Average, Min, Max, Product; got %r"
                      % (what, op))
    return op


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

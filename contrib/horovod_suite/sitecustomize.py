"""Two helpers of Horovod's own package that its TensorFlow test files
import and Tandem's shim does not provide, for contrib/horovod-suite.sh only
(this folder is first on PYTHONPATH there, so Python runs this at start-up):

* ``horovod.runner.common.util.env.get_env_rank_and_size()``
  (test_tensorflow_process_sets.py): (rank, size) from HOROVOD_RANK/SIZE,
  OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE, (0, 1) without any, an error
  when only one of a pair is set;
* ``horovod.common.util.is_version_greater_equal_than(ver, target)``
  (test_tensorflow2_keras.py).

Written from the helpers' documented meaning. The modules are registered
under those names without importing the horovod package itself, so a rank
still imports Tandem's horovod shim as usual.
"""

import os
import sys
import types


def get_env_rank_and_size():
    for rank_var, size_var in (("HOROVOD_RANK", "HOROVOD_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE")):
        rank, size = os.environ.get(rank_var), os.environ.get(size_var)
        if rank is not None and size is not None:
            return int(rank), int(size)
        if rank is not None or size is not None:
            raise RuntimeError("Could not determine process rank and size: only one of %s "
                               "and %s found in environment" % (rank_var, size_var))
    return 0, 1


def is_version_greater_equal_than(ver, target):
    from packaging import version
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError("is_version_greater_equal_than takes two strings, got %r and %r"
                         % (ver, target))
    return version.parse(ver) >= version.parse(target)


def _module(name, **attributes):
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


_module("horovod.runner", __path__=[])
_module("horovod.runner.common", __path__=[])
_module("horovod.runner.common.util", __path__=[])
_module("horovod.runner.common.util.env", get_env_rank_and_size=get_env_rank_and_size)
_module("horovod.common.util", is_version_greater_equal_than=is_version_greater_equal_than)

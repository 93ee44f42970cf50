"""Runs one of Horovod's Adasum test files (read from the checkout, written
to a temporary path by the test) on this rank, under Tandem, and prints
what ran: ``adasum: ran N passed P skipped S failed F``, ``adasum pass
NAME`` per test passed and ``adasum skip NAME: REASON`` per skip.

Horovod guards these tests with ``hvd.mpi_enabled()`` only because its Gloo
backend has no Adasum; Tandem runs Adasum without MPI, so inside the test
module (and nowhere else) ``hvd.mpi_enabled()`` is True. Its orthogonal and
parallel tests also need a GPU only to pick a device: with ``--cpu-device``
the module's ``torch.cuda.is_available()`` is True and ``torch.device()``
gives the CPU, so they run on CPU tensors, and ``hvd.nccl_built()`` is 0
there, the expectation Horovod states for Adasum off NCCL (a sum, not a
sum divided by the local size). Under NumPy 2 the module's ``np.alltrue``
(removed there) is ``np.all``. Nothing of the tests themselves changes.

Usage: horovod_adasum.py torch|tensorflow TEST_FILE [--cpu-device]
"""

import importlib.util
import sys
import types
import unittest


class _Proxy(types.SimpleNamespace):
    """A module seen through a few replaced attributes."""

    def __init__(self, module, **replaced):
        super().__init__(**replaced)
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)


def _cpu_torch():
    import torch
    cuda = _Proxy(torch.cuda, is_available=lambda: True)
    return _Proxy(torch, cuda=cuda, device=lambda *args, **kwargs: torch.device("cpu"))


def main():
    frontend, path = sys.argv[1], sys.argv[2]
    cpu_device = "--cpu-device" in sys.argv[3:]
    if frontend == "torch":
        import horovod.torch as hvd
    else:
        import horovod.tensorflow as hvd
    spec = importlib.util.spec_from_file_location("horovod_adasum_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    replaced = {"mpi_enabled": lambda: True}
    if cpu_device:
        replaced["nccl_built"] = lambda: 0
        module.torch = _cpu_torch()
    module.hvd = _Proxy(hvd, **replaced)
    import numpy
    if not hasattr(numpy, "alltrue"):  # NumPy 2 removed it; the tests call it
        module.np = _Proxy(numpy, alltrue=numpy.all)
    # The tests the file defines, not those its base class brings
    # (tf.test.TestCase has a test_session helper).
    suite = unittest.TestSuite()
    for cls in vars(module).values():
        if isinstance(cls, type) and issubclass(cls, unittest.TestCase) \
                and cls.__module__ == module.__name__:
            for name in sorted(n for n in vars(cls) if n.startswith("test")):
                suite.addTest(cls(name))
    ids = [test.id() for test in suite]  # the suite forgets its tests as they run
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    bad = len(result.failures) + len(result.errors)
    print("adasum: ran %d passed %d skipped %d failed %d" % (
        result.testsRun, result.testsRun - bad - len(result.skipped), len(result.skipped), bad))
    not_passed = {t.id() for t, _ in result.failures + result.errors + result.skipped}
    for test_id in ids:
        if test_id not in not_passed:
            print("adasum pass %s" % test_id.rsplit(".", 1)[-1])
    for test, reason in result.skipped:
        print("adasum skip %s: %s" % (test.id().rsplit(".", 1)[-1], reason))
    hvd.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

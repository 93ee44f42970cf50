"""The three helpers Horovod's test/parallel/test_torch.py imports from its
test/utils/common.py, for contrib/horovod-suite.sh.

Horovod's own common.py imports horovod.runner, mock and cloudpickle, none of
which Tandem's shim provides, so the suite runner puts this folder first on
PYTHONPATH and the test file finds this module instead. Written from the
helpers' documented meaning, not copied:

* mpi_env_rank_and_size(): (rank, size) from the MPI launcher's environment
  (PMI_RANK/PMI_SIZE, OMPI_COMM_WORLD_RANK/SIZE), (0, 1) when there is none.
* skip_or_fail_gpu_test(test, message): a GPU test that cannot run is a
  failure when HOROVOD_TEST_GPU=1, else a skip.
* temppath(): a context giving a file path in a fresh temporary folder,
  removed afterwards.
"""

import contextlib
import os
import shutil
import tempfile


def mpi_env_rank_and_size():
    for rank_var, size_var in (("PMI_RANK", "PMI_SIZE"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def skip_or_fail_gpu_test(test, message):
    if int(os.environ.get("HOROVOD_TEST_GPU", 0)):
        test.fail(message)
    else:
        test.skipTest(message)


@contextlib.contextmanager
def temppath():
    folder = tempfile.mkdtemp()
    try:
        yield os.path.join(folder, "temp_test_file")
    finally:
        shutil.rmtree(folder, ignore_errors=True)

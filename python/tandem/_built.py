"""What this build of Tandem has, with Horovod's meanings, for every frontend.

``*_built()`` is "compiled with support for it", not "usable on this node".
Tandem has no MPI, Gloo, oneCCL, DDL or ROCm. Its GPU path is CUDA and NCCL
together, both loaded at run time, so nccl_built() and cuda_built() say
whether the loaded libtandem was compiled with that path (true on a CPU-only
node of a CUDA build). Whether device tensors work here is each frontend's
gpu_available(): the engine's answer (gpu_status()) and the framework's.
tandem-info prints the engine's reason when the path is not usable.
"""

from tandem import _collectives


def mpi_built():
    return False


def mpi_enabled():
    return False


def mpi_threads_supported():
    return False


def gloo_built():
    return False


def gloo_enabled():
    return False


def ccl_built():
    return False


def ddl_built():
    return False


def rocm_built():
    return False


def nccl_built():
    return _collectives.gpu_path_compiled()


def cuda_built():
    return _collectives.gpu_path_compiled()


def gpu_status():
    """(usable, reason) from the engine's tandem_gpu_available(); raises
    InvalidArgumentError for a bad setting such as TANDEM_GPU_DEVICE=x."""
    return _collectives.gpu_available()

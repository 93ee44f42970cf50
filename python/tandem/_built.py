"""What this build of Tandem has, with Horovod's types and meanings, for every
frontend.

``*_built()`` is "compiled with support for it", not "usable on this node".
Tandem has no MPI, Gloo, oneCCL, DDL or ROCm: those are False, and MPI and
Gloo are never enabled at run time. Its GPU path is CUDA and NCCL together,
both loaded at run time, so cuda_built() says whether the loaded libtandem
was compiled with that path (True on a CPU-only node of a CUDA build) and
nccl_built() returns, as Horovod does, the NCCL version code compiled against
(NCCL_VERSION_CODE: 22809 for 2.28.9, 2708 for 2.7.8) or 0. Whether device
tensors work here is each frontend's gpu_available(): the engine's answer
(gpu_status()) and the framework's. tandem-info prints the engine's reason
when the path is not usable.
"""

import re

from tandem import _basics, _collectives

# The oldest NCCL the engine's GPU path accepts (engine/gpu/nccl_api.cc):
# what nccl_built() reports for a GPU build whose exact NCCL version is
# unknown here (see _nccl_version_text).
OLDEST_NCCL = "2.14.0"


def mpi_built():
    return False


def mpi_enabled():
    return False


def mpi_threads_supported():
    """Horovod raises this ValueError whenever MPI is not enabled, which under
    Tandem is always."""
    raise ValueError("Horovod MPI is not enabled; Please make sure it's installed and enabled. "
                     "(Tandem has no MPI: it joins the job through PMIx or tandem-run, so "
                     "there is no MPI threading level to ask for.)")


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


# The reason classify() gives when the GPU path was not compiled in
# (engine/gpu/availability.cc); the engine has no other way to say it.
_NOT_COMPILED = "built without CUDA/NCCL headers"


def gpu_path_compiled():
    """Whether the loaded libtandem was compiled with the GPU path (CUDA and
    NCCL headers at build time), whether or not this node has a GPU: the
    meaning of Horovod's nccl_built()/cuda_built(). Exact from the Meson
    build facts when they describe the loaded file; otherwise from the
    engine's own availability answer."""
    if not _collectives.has_gpu_api():
        return False
    facts = _basics.loaded_build_info()
    if facts is not None:
        return bool(facts["cuda_headers"])
    available, reason = _collectives.gpu_available()
    return available or _NOT_COMPILED not in reason


def cuda_built():
    return gpu_path_compiled()


def nccl_version_code(version):
    """NCCL's NCCL_VERSION_CODE for "X.Y.Z": X*1000+Y*100+Z up to 2.8, and
    X*10000+Y*100+Z from 2.9 on (nccl.h's NCCL_VERSION macro)."""
    major, minor, patch = (int(part) for part in version.split("."))
    if major <= 2 and minor <= 8:
        return major * 1000 + minor * 100 + patch
    return major * 10000 + minor * 100 + patch


def _nccl_version_text():
    """The NCCL version the loaded libtandem was compiled against: exact from
    the Meson build facts when they describe the loaded file; otherwise the
    NCCL the engine loaded (in its reason when the GPU path is usable);
    otherwise the oldest NCCL the GPU path accepts."""
    facts = _basics.loaded_build_info()
    if facts is not None and facts.get("nccl_headers"):
        return facts["nccl_headers"]
    available, reason = _collectives.gpu_available()
    match = re.search(r"NCCL (\d+\.\d+\.\d+)", reason) if available else None
    return match.group(1) if match else OLDEST_NCCL


def nccl_built():
    """Horovod's meaning: the NCCL version code compiled against (an int,
    e.g. 22809), or 0 without NCCL support."""
    if not gpu_path_compiled():
        return 0
    return nccl_version_code(_nccl_version_text())


def gpu_status():
    """(usable, reason) from the engine's tandem_gpu_available(); raises
    InvalidArgumentError for a bad setting such as TANDEM_GPU_DEVICE=x."""
    return _collectives.gpu_available()

"""Process-level calls every frontend shares: joining the job, asking who we
are, the timeline. tandem.torch, tandem.tensorflow and tandem.keras export
these functions themselves (``hvd.init`` is ``tandem._basics.init``)."""

import atexit
import ctypes
import os
import threading

from tandem import _collectives, _dtypes, _elastic_launch, _library, errors
from tandem import process_sets as _ps

_init_lock = threading.Lock()
_atexit_registered = False


def _call(name, *args):
    errors.check(getattr(_library.library(), name)(*args))


def init(comm=None, process_sets=None):
    """Joins the job (PMIx under srun, tandem-run's rendezvous, or a world of
    one); a second call is a no-op. ``comm`` (an MPI communicator in Horovod)
    is refused: Tandem joins without MPI. ``process_sets``: a list of
    hvd.ProcessSet (or lists of ranks) registered on every rank, or
    "dynamic" (Horovod's word for "sets are added later", which Tandem always
    allows)."""
    global _atexit_registered
    if comm is not None:
        raise errors.make("TANDEM_ERR_UNSUPPORTED",
                          "init(comm=...): Tandem does not run on MPI communicators; call "
                          "init() and let srun --horovod=on or tandem-run start the ranks")
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise errors.make("TANDEM_ERR_INVALID_ARGUMENT",
                              "init(process_sets=%r): give a list of hvd.ProcessSet or "
                              "'dynamic'" % process_sets)
        process_sets = None
    with _init_lock:
        _call("tandem_init")
        if not _atexit_registered:
            # Leave the job cleanly when the script ends without shutdown():
            # peers then see an orderly exit rather than a lost connection.
            atexit.register(shutdown)
            _atexit_registered = True
            # Under an elastic launch a normal exit is reported as done, not failed.
            _elastic_launch.register_exit_hook()
    _dtypes.verify()
    for process_set in process_sets or ():
        _ps.add_process_set(process_set)


def shutdown():
    """Leaves the job and releases the engine's resources; safe to call twice."""
    if _library._library is None:
        return
    _call("tandem_finalize")


def is_initialized():
    return bool(_library.library().tandem_is_initialized())


def _int_query(name):
    value = ctypes.c_int(-1)
    _call(name, ctypes.byref(value))
    return value.value


def rank():
    return _int_query("tandem_rank")


def size():
    return _int_query("tandem_size")


def local_rank():
    return _int_query("tandem_local_rank")


def local_size():
    return _int_query("tandem_local_size")


def cross_rank():
    return _int_query("tandem_cross_rank")


def cross_size():
    return _int_query("tandem_cross_size")


def is_homogeneous():
    """True when every node runs the same number of ranks (size divides
    evenly into cross_size nodes of local_size ranks)."""
    sizes = [row[0] for row in _collectives.allgather_int64([local_size()])]
    return all(s == sizes[0] for s in sizes)


def start_timeline(file_path, mark_cycles=False):
    """Starts the Chrome-trace timeline (written by rank 0); call on every rank."""
    _collectives.start_timeline(file_path, mark_cycles)


def stop_timeline():
    _collectives.stop_timeline()


def library_version():
    return _library.library().tandem_version().decode()


def library_origin():
    """Where libtandem was loaded from ("already loaded in the process" under
    the plugin, else a path)."""
    return _library.library().origin


def build_info():
    """What this build holds, from the Meson configuration (empty for a pip
    install without a Meson build)."""
    try:
        from tandem import _config
    except ImportError:
        return {}
    return dict(_config.BUILD)


def loaded_build_info():
    """build_info() when it describes the libtandem this process actually
    loaded (the same file), else None: a preloaded or TANDEM_LIBRARY engine
    may come from another build than this package."""
    try:
        from tandem import _config
    except ImportError:
        return None
    loaded = _library.library().loaded_file()
    if loaded is None:
        return None
    for candidate in _config.LIBRARY_CANDIDATES:
        if os.path.exists(candidate) and os.path.realpath(candidate) == loaded:
            return dict(_config.BUILD)
    return None

"""Process-level calls: joining the job and asking who we are."""

import atexit
import ctypes
import threading

from tandem import _library, errors

_init_lock = threading.Lock()
_atexit_registered = False


def _call(name, *args):
    errors.check(getattr(_library.library(), name)(*args))


def init():
    """Joins the job (PMIx under srun, tandem-run's rendezvous, or a world of
    one). A second call is a no-op."""
    global _atexit_registered
    with _init_lock:
        _call("tandem_init")
        if not _atexit_registered:
            # Leave the job cleanly when the script ends without shutdown():
            # peers then see an orderly exit rather than a lost connection.
            atexit.register(shutdown)
            _atexit_registered = True
            from tandem.elastic import run as _elastic_run  # an elastic launch: exit hook
            _elastic_run.register_exit_hook()


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
    from tandem import _objects  # a collective: every rank must call this
    sizes = _objects.allgather_ints([local_size()])
    return all(s == sizes[0] for s in sizes)


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
    import os
    loaded = _library.library().loaded_file()
    if loaded is None:
        return None
    for candidate in _config.LIBRARY_CANDIDATES:
        if os.path.exists(candidate) and os.path.realpath(candidate) == loaded:
            return dict(_config.BUILD)
    return None

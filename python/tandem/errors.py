"""Engine errors as Python exceptions.

Every failed libtandem call raises a subclass of :class:`TandemError` (itself a
``RuntimeError``) carrying the engine's message. The subclasses are made when
the library is loaded, one per row of the engine's one error table
(engine/common/errors.h), read through the C API: ``tandem_result_name()``
lists the codes, ``tandem_result_class()`` names each class
(``MismatchError``, ``TimeoutError``, ``DuplicateNameError``,
``InvalidArgumentError``, ``UnsupportedError``, ...) and
``tandem_result_is_argument_error()`` says which blame the call's arguments.
Nothing here is a copy of the table. ``tandem.errors.TimeoutError`` is a
``TandemError``, not the builtin of the same name.

Horovod's exception types are kept (its torch binding turns the engine's
InvalidArgument status of an enqueue into ``ValueError`` and every other
failure into ``HorovodInternalError``, a ``RuntimeError``; its own test suite
catches them so): the argument errors (a duplicate in-flight name, a bad
argument) make classes that are also ``ValueError``, and every other code,
including any code a newer library adds, makes a subclass of
:class:`HorovodInternalError`, which elastic-style scripts catch
(``except HorovodInternalError``) and horovod.common.exceptions re-exports.
After the engine failed (a lost peer, a timeout) every later call raises
the same class; after any other failure later calls raise ``AbortedError``
with the first failure's message (the table's "lasting" column).
"""

import threading

from tandem import _library


TandemError = _library.TandemError
LibraryMismatch = _library.LibraryMismatch


class HorovodInternalError(TandemError):
    """An operation failed in the engine (ranks disagreed, a peer was lost or
    did not answer, the engine was shut down or aborted, ...): Horovod's
    ``horovod.common.exceptions.HorovodInternalError``, a ``RuntimeError``.
    Scripts may also raise it themselves, as with Horovod."""


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by ``state.commit()`` on every rank at once when processes
    asked to join an elastic job (docs/elastic.md); ``hvd.elastic.run``
    catches it and moves to the next generation. ``skip_sync`` (hosts were
    only removed) lets the run skip the state broadcast. As in Horovod, not
    a HorovodInternalError."""

    def __init__(self, skip_sync):
        super().__init__(skip_sync)
        self.skip_sync = skip_sync


def _bases(argument_error):
    # Horovod raises ValueError for these (its torch binding maps an
    # enqueue's InvalidArgument status, e.g. a duplicate in-flight name, to
    # std::invalid_argument, which pybind11 turns into ValueError, and its
    # test suite catches `ValueError` there). They are not HorovodInternalError.
    if argument_error:
        return (TandemError, ValueError)
    return (HorovodInternalError,)


_by_code = {}
_by_name = {}
_codes = {}  # every result name, success included -> value
_lock = threading.Lock()
_SUCCESS = "TANDEM_SUCCESS"
_IN_PROGRESS = "TANDEM_ERR_IN_PROGRESS"


def _populate():
    if _by_name:
        return
    with _lock:
        if _by_name:
            return
        lib = _library.library()
        code = 0
        table = {}
        while True:
            raw = lib.tandem_result_name(code)
            if raw is None:
                break
            table[raw.decode()] = code
            code += 1
        if _SUCCESS not in table:
            raise _library.LibraryNotFound(
                "libtandem (%s) reports no TANDEM_SUCCESS result name: not a Tandem library"
                % lib.origin)
        for name, value in table.items():
            if name == _SUCCESS:
                continue
            cls = type(lib.tandem_result_class(value).decode(),
                       _bases(bool(lib.tandem_result_is_argument_error(value))), {
                "code": value, "name": name,
                "__doc__": lib.tandem_result_string(value).decode(),
                "__module__": __name__,
            })
            _by_code[value] = cls
            globals()[cls.__name__] = cls
        _codes.update(table)
        _by_name.update({cls.name: cls for cls in _by_code.values()})


def __getattr__(attr):  # PEP 562: tandem.errors.MismatchError loads the library
    if attr.endswith("Error") and not attr.startswith("_"):
        _populate()
        if attr in globals():
            return globals()[attr]
    raise AttributeError("module 'tandem.errors' has no attribute %r" % attr)


def code_of(name):
    """The value of a result name, from the library ("TANDEM_ERR_IN_PROGRESS")."""
    _populate()
    return _codes[name]


def error_class(name):
    """The exception class for a result name ("TANDEM_ERR_UNSUPPORTED")."""
    _populate()
    return _by_name[name]


def make(name, message):
    """An exception of the class for ``name`` with a message made on the Python
    side (argument checks done before reaching the engine)."""
    return error_class(name)(message)


def from_code(code):
    """The exception for a failed call, with the engine's last-error message."""
    _populate()
    lib = _library.library()
    message = lib.tandem_last_error()
    message = message.decode(errors="replace") if message else ""
    if not message:
        message = lib.tandem_result_string(code).decode(errors="replace")
    cls = _by_code.get(code)
    if cls is None:
        return HorovodInternalError("libtandem returned unknown result %d: %s" % (code, message))
    return cls(message)


_success_code = None


def check(code):
    """Raises the matching TandemError unless ``code`` is TANDEM_SUCCESS."""
    global _success_code
    if _success_code is None:
        _success_code = code_of(_SUCCESS)
    if code != _success_code:
        raise from_code(code)


def from_result(code, message):
    """The exception for an operation's result code with its own message
    (tandem_handle_error), falling back to the code's description."""
    _populate()
    lib = _library.library()
    if not message:
        message = lib.tandem_result_string(code).decode(errors="replace")
    cls = _by_code.get(code)
    if cls is None:
        return HorovodInternalError("libtandem returned unknown result %d: %s"
                                    % (code, message))
    return cls(message)

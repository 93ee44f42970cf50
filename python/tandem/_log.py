"""Python's side of Tandem's one log (engine/common/log.h, docs/settings.md).

The ``"tandem"`` logger of the standard :mod:`logging` module follows the
engine's two variables:

* ``TANDEM_LOG=error|warn|info|debug|trace`` (default ``warn``; Horovod's
  ``HOROVOD_LOG_LEVEL`` is honoured as its other name) sets its level
  (``trace`` is :data:`TRACE`, below ``logging.DEBUG``);
* ``TANDEM_LOG_SUBSYS=python,tcp`` (default all; ``^python`` excludes): the
  package's messages are the ``python`` subsystem, so info and below are
  shown only when it is selected. Warnings and errors always are.

Lines look like the engine's, on stderr::

    tandem[r3 node2] INFO python: libtandem 0.1.0 loaded from ...
    tandem[r3 node2] WARN python optimizer.py:297: ...

The rank and node come from the launcher's variables (``HOROVOD_RANK`` and
``HOROVOD_HOSTNAME`` under ``srun --horovod=on``, ``TANDEM_RANK`` under
tandem-run), so lines logged before ``init()`` carry them too. The logger has
its own handler and does not propagate to the root logger (no line twice when
a script calls ``logging.basicConfig``); a program that wants the lines in its
own handlers sets ``logging.getLogger("tandem").propagate = True`` and
removes the handler. ``configure()`` runs when ``tandem`` is imported; a bad
value is a ``ValueError`` naming the variable and the value, the same
message the engine gives. Subsystem names are checked by the engine, which
knows the list, when it initializes.
"""

import logging
import os
import socket
import sys

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

LEVEL_VARIABLE = "TANDEM_LOG"
SUBSYS_VARIABLE = "TANDEM_LOG_SUBSYS"
HOROVOD_LEVEL_VARIABLE = "HOROVOD_LOG_LEVEL"

_LEVELS = {
    "error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO,
    "debug": logging.DEBUG, "trace": TRACE,
    # Horovod's spellings, accepted under either name as the engine does.
    "warning": logging.WARNING, "fatal": logging.ERROR,
}
_NAMES = {logging.ERROR: "ERROR", logging.WARNING: "WARN", logging.INFO: "INFO",
          logging.DEBUG: "DEBUG", TRACE: "TRACE", logging.CRITICAL: "ERROR"}

logger = logging.getLogger("tandem")


def _parse_level(variable, value):
    level = _LEVELS.get(value.lower())
    if level is None:
        raise ValueError("%s='%s': expected one of error, warn, info, debug, trace; fix or "
                         "unset the variable" % (variable, value))
    return level


def level_from(environ):
    """The level the two level variables give (logging's numbers)."""
    mine = environ.get(LEVEL_VARIABLE, "")
    horovod = environ.get(HOROVOD_LEVEL_VARIABLE, "")
    if mine and horovod and \
            _parse_level(LEVEL_VARIABLE, mine) != _parse_level(HOROVOD_LEVEL_VARIABLE, horovod):
        raise ValueError("%s='%s' and %s='%s' disagree; set only one of them"
                         % (LEVEL_VARIABLE, mine, HOROVOD_LEVEL_VARIABLE, horovod))
    if mine:
        return _parse_level(LEVEL_VARIABLE, mine)
    if horovod:
        return _parse_level(HOROVOD_LEVEL_VARIABLE, horovod)
    return logging.WARNING


def subsystem_selected(environ, subsystem="python"):
    """Whether TANDEM_LOG_SUBSYS selects ``subsystem`` for info and below."""
    value = environ.get(SUBSYS_VARIABLE, "")
    if not value:
        return True
    exclude = value.startswith("^")
    names = {n.strip().lower() for n in value.lstrip("^").split(",")}
    named = subsystem in names or "all" in names
    return not named if exclude else named


def _who(program, environ):
    if program != "tandem":
        return program
    rank = environ.get("HOROVOD_RANK") or environ.get("TANDEM_RANK")
    if rank is None:
        return None  # "tandem[pid N]", the pid at the time of the line (forks)
    # The engine's order (bootstrap/from_environment.cc): Slurm's node name
    # rather than a container's host name.
    node = environ.get("HOROVOD_HOSTNAME") or environ.get("TANDEM_NODE_NAME") or \
        environ.get("SLURMD_NODENAME") or socket.gethostname()
    return "tandem[r%s %s]" % (rank, node)


class _Formatter(logging.Formatter):
    def __init__(self, program, environ):
        super().__init__()
        self.who = _who(program, environ)

    def format(self, record):
        name = _NAMES.get(record.levelno, record.levelname)
        subsystem = record.name.split(".", 1)[1] if "." in record.name else "python"
        where = " %s:%d" % (record.filename, record.lineno) if name == "WARN" else ""
        who = self.who or "tandem[pid %d]" % os.getpid()
        text = "%s %s %s%s: %s" % (who, name, subsystem, where,
                                   record.getMessage())
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _SubsystemFilter(logging.Filter):
    """Info and below only from the selected subsystems (child loggers
    ``tandem.<subsystem>``; ``tandem`` itself is ``python``)."""

    def __init__(self, environ):
        super().__init__()
        self.environ = dict(environ)

    def filter(self, record):
        if record.levelno >= logging.WARNING:
            return True
        subsystem = record.name.split(".", 1)[1] if "." in record.name else "python"
        return subsystem_selected(self.environ, subsystem)


_handler = None


def configure(environ=None, program="tandem", stream=None):
    """Sets the ``tandem`` logger's level, filter and handler from the
    variables (the process environment by default). Raises ValueError naming
    a bad value. ``program`` names the lines of a tool (``tandem-info``)."""
    global _handler
    environ = os.environ if environ is None else environ
    level = level_from(environ)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_Formatter(program, environ))
    handler.addFilter(_SubsystemFilter(environ))
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = handler
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False

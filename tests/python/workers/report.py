"""Runs a worker's checks on this rank and reports each one on its own line
(PASS/FAIL/SKIP name rank N), so the pytest side can assert every check on
every rank; shared by every worker (check_api.py, check_gpu.py, the
TensorFlow workers), so it uses the framework-neutral core only."""

import sys
import traceback

import tandem


def run_checks(checks, skip=None):
    """Runs every check (or reports them all skipped with the reason), shuts
    the engine down, and returns the exit status: 1 when any check failed."""
    failed = 0
    for fn in checks:
        if skip is not None:
            print("SKIP %s rank %d: %s" % (fn.__name__, tandem.rank(), skip), flush=True)
            continue
        try:
            fn()
            print("PASS %s rank %d" % (fn.__name__, tandem.rank()), flush=True)
        except Exception as exc:  # noqa: BLE001 - report every check, then fail
            failed += 1
            print("FAIL %s rank %d: %s: %s" % (fn.__name__, tandem.rank(), type(exc).__name__,
                                               exc), flush=True)
            traceback.print_exc(file=sys.stderr)
    tandem.shutdown()
    return 1 if failed else 0

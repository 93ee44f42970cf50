"""One rank of ``horovod.run`` (tandem._run_function): loads the pickled call
from the folder given, makes it, and writes (True, result) or (False,
"Type: message") to the rank's file; an error also exits non-zero so that
tandem-run ends the job."""

import os
import pickle
import runpy
import sys
import traceback
import types

from tandem import _run_function


def _caller_main(path, argv):
    """The caller's script as module ``__mp_main__``, also reachable as
    ``__main__`` for the unpickler, as multiprocessing's spawn loads it."""
    sys.argv = list(argv)
    module = types.ModuleType("__mp_main__")
    module.__file__ = path
    sys.modules["__mp_main__"] = module
    module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    return module


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, main):
        super().__init__(f)
        self._main = main

    def find_class(self, module, name):
        if module == "__main__" and self._main is not None:
            return getattr(self._main, name)
        return super().find_class(module, name)


def main(directory):
    rank = int(os.environ["TANDEM_RANK"])
    with open(os.path.join(directory, _run_function.FUNCTION_FILE), "rb") as f:
        header = pickle.load(f)
        caller = _caller_main(header["main"], header["argv"]) if header["main"] else None
        fn, args, kwargs = _Unpickler(f, caller).load()
    try:
        outcome = (True, fn(*args, **kwargs))
        status = 0
    except BaseException as e:  # noqa: BLE001 - the caller gets every rank's failure, whatever it was
        traceback.print_exc()
        outcome = (False, "%s: %s" % (type(e).__name__, e))
        status = 1
    name = _run_function.result_file(directory, rank)
    with open(name + ".part", "wb") as f:
        _run_function.pickler().dump(outcome, f)
    os.replace(name + ".part", name)
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

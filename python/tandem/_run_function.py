"""Running a Python function on N ranks of this host and collecting what each
returned, for ``horovod.run``: the function and its arguments are pickled
(with cloudpickle when it is installed, so that lambdas travel too),
``tandem-run`` starts the ranks, each rank's worker
(``tandem._run_function_worker``) calls it and writes its result, or its
error, to a file named for its rank in a private temporary folder. Without
cloudpickle a function of the caller's ``__main__`` is pickled by name; the
worker then loads the caller's script as ``__mp_main__``, as
multiprocessing's spawn does, so that the name resolves (the script's
``if __name__ == "__main__"`` part does not run again)."""

import os
import pickle
import shutil
import subprocess
import sys
import tempfile

from tandem import _config

FUNCTION_FILE = "function.pkl"


def result_file(directory, rank):
    return os.path.join(directory, "rank.%d.pkl" % rank)


def pickler():
    try:
        import cloudpickle
        return cloudpickle
    except ImportError:
        return pickle


def run_tool():
    """The tandem-run this package was built with, else the one on PATH."""
    built = getattr(_config, "RUN_TOOL", "")
    if built and os.access(built, os.X_OK):
        return built
    found = shutil.which("tandem-run")
    if found is None:
        raise RuntimeError("horovod.run: tandem-run was not found (expected %s or on PATH): "
                           "install Tandem's tools or load its module" % (built or "it"))
    return found


def run_function(fn, args, kwargs, np, executable=None, timeout=None, verbose=False):
    """Runs fn(*args, **kwargs) on np ranks of this host; the list of its
    results by rank.
    A rank that raised, or died, makes it raise RuntimeError naming the rank
    and its error."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="tandem-run-fn-") as directory:
        module = pickler()
        try:
            with open(os.path.join(directory, FUNCTION_FILE), "wb") as f:
                main = getattr(sys.modules.get("__main__"), "__file__", None)
                # First the caller's script and arguments (plain data), then
                # the call, which may name functions of that script.
                pickle.dump({"main": os.path.abspath(main) if main and module is pickle
                             else None, "argv": list(sys.argv)}, f)
                module.dump((fn, tuple(args), dict(kwargs)), f)
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise ValueError("horovod.run: the function cannot be pickled (%s)%s" % (
                e, "" if module is not pickle else
                "; install cloudpickle to run lambdas and nested functions")) from e
        command = [run_tool(), "-np", str(np)]
        if timeout is not None:
            command += ["--timeout", str(int(timeout))]
        command += [executable or sys.executable, "-m", "tandem._run_function_worker",
                    directory]
        env = dict(os.environ)
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = package_root + (os.pathsep + path if path else "")
        if verbose:
            print("horovod.run: " + " ".join(command), file=sys.stderr, flush=True)
        status = subprocess.run(command, env=env).returncode
        results = []
        failures = []
        for rank in range(np):
            name = result_file(directory, rank)
            if not os.path.exists(name):
                failures.append("rank %d returned nothing (it died or was stopped)" % rank)
                results.append(None)
                continue
            with open(name, "rb") as f:
                ok, value = pickle.load(f)
            if ok:
                results.append(value)
            else:
                failures.append("rank %d raised %s" % (rank, value))
                results.append(None)
        if failures or status != 0:
            raise RuntimeError("horovod.run: the job of %d ranks failed (tandem-run exit status "
                               "%d): %s" % (np, status, "; ".join(failures) or
                                            "every rank returned, then the job failed"))
        return results

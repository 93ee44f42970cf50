"""horovodrun -cb: Horovod's layout, filled with what this install has.

A framework is [X] when this python imports it and Tandem's binding for it;
NCCL is [X] when the engine says its GPU path is usable here (the engine's
reason is printed with --verbose, as tandem-info prints it). Tandem is
neither MPI nor Gloo: those lines stay empty and one more line in each
section names what Tandem uses instead.
"""

import os
import sys


def _mark(flag):
    return "X" if flag else " "


def _framework(module, binding):
    """(importable, why) for one framework and Tandem's module for it."""
    try:
        fw = __import__(module)
    except Exception as exc:  # noqa: BLE001 - a broken install is also "not available"
        return False, "%s is not importable by %s (%s)" % (module, sys.executable, exc)
    version = getattr(fw, "__version__", "?")
    try:
        __import__(binding)
    except Exception as exc:  # noqa: BLE001 - say why the binding does not load
        return False, "%s %s imports, but %s does not: %s" % (module, version, binding, exc)
    return True, "%s %s (%s)" % (module, version, sys.executable)


def _nccl():
    """(usable, why) from the engine."""
    try:
        from tandem import _collectives
        return _collectives.gpu_available()
    except Exception as exc:  # noqa: BLE001 - no engine: NCCL is not usable, say why
        return False, "the Tandem engine does not load: %s" % exc


def report(verbose):
    """The text horovodrun -cb prints."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # importing TF is chatty
    import horovod
    tf_ok, tf_why = _framework("tensorflow", "tandem.tensorflow")
    torch_ok, torch_why = _framework("torch", "tandem.torch")
    nccl_ok, nccl_why = _nccl()
    lines = ["", "Horovod v%s:" % horovod.__version__, "",
             "Available Frameworks:",
             "    [%s] TensorFlow" % _mark(tf_ok),
             "    [%s] PyTorch" % _mark(torch_ok),
             "    [ ] MXNet", "",
             "Available Controllers:",
             "    [ ] MPI",
             "    [ ] Gloo",
             "    [X] Tandem (PMIx under srun, its TCP store under tandem-run)", "",
             "Available Tensor Operations:",
             "    [%s] NCCL" % _mark(nccl_ok),
             "    [ ] DDL",
             "    [ ] CCL",
             "    [ ] MPI",
             "    [ ] Gloo",
             "    [X] Tandem CPU collectives"]
    if not verbose:
        lines = lines[1:]
    else:
        lines += ["", "TensorFlow: " + tf_why, "PyTorch: " + torch_why,
                  "NCCL: %s: %s" % ("usable" if nccl_ok else "not usable",
                                    nccl_why or "(the engine gave no reason)"),
                  "MXNet: Tandem has no MXNet binding"]
    return "\n".join(lines)

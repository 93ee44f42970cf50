"""Loading libtandem and turning its result codes into exceptions."""

import ctypes
import subprocess
import sys

import pytest


def run_python(env, code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60)


def test_error_classes_come_from_the_library(py_env, build_dir):
    # The reference is the library itself, read here with plain ctypes.
    lib = ctypes.CDLL(str(build_dir / "engine" / "libtandem.so"))
    lib.tandem_result_name.restype = ctypes.c_char_p
    lib.tandem_result_class.restype = ctypes.c_char_p
    names, classes, value_errors = {}, {}, set()
    code = 0
    while lib.tandem_result_name(code) is not None:
        names[lib.tandem_result_name(code).decode()] = code
        if code:
            classes[lib.tandem_result_name(code).decode()] = lib.tandem_result_class(code).decode()
        if lib.tandem_result_is_argument_error(code):
            value_errors.add(lib.tandem_result_name(code).decode())
        code += 1
    assert value_errors == {"TANDEM_ERR_INVALID_ARGUMENT", "TANDEM_ERR_DUPLICATE_NAME"}
    r = run_python(py_env, """
import json, tandem.errors as e
e._populate()
print(json.dumps({c.name: [c.code, c.__name__, issubclass(c, RuntimeError),
                           issubclass(c, e.TandemError), issubclass(c, ValueError)]
                  for c in e._by_code.values()}))
""")
    assert r.returncode == 0, r.stderr
    import json
    got = json.loads(r.stdout)
    want_names = {n for n in names if n != "TANDEM_SUCCESS"}
    assert set(got) == want_names
    for name, (value, cls, is_runtime, is_tandem, is_value_error) in got.items():
        assert value == names[name]
        assert is_runtime and is_tandem
        assert cls == classes[name]  # the engine's table names the class
        # ... and the names stay what scripts catch (Horovod-style CamelCase)
        assert cls == "".join(p.capitalize() for p in name[len("TANDEM_ERR_"):].split("_")) + \
            "Error"
        assert is_value_error == (name in value_errors)


def test_engine_message_travels_with_the_exception(py_env):
    r = run_python(py_env, """
import tandem.errors as e
lib = __import__('tandem._library', fromlist=['x']).library()
code = e.code_of('TANDEM_ERR_TIMEOUT')
exc = e.from_result(code, 'allreduce grad.fc1: rank 3 did not answer in 60 s')
assert isinstance(exc, e.TimeoutError) and isinstance(exc, RuntimeError)
assert str(exc) == 'allreduce grad.fc1: rank 3 did not answer in 60 s'
assert str(e.from_result(code, '')) == lib.tandem_result_string(code).decode()
try:
    e.check(code)
except e.TimeoutError as x:
    print('raised', type(x).__name__)
e.check(e.code_of('TANDEM_SUCCESS'))
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "raised TimeoutError"


def test_tandem_library_that_does_not_load_is_named(py_env, tmp_path):
    bogus = tmp_path / "libnothing.so"
    bogus.write_text("not a library")
    r = run_python(dict(py_env, TANDEM_LIBRARY=str(bogus)),
                   "import tandem; tandem.library_version()")
    assert r.returncode != 0
    assert "TANDEM_LIBRARY=%s could not be loaded" % bogus in r.stderr


def test_explicit_library_is_used(py_env, build_dir):
    lib = str(build_dir / "engine" / "libtandem.so")
    r = run_python(dict(py_env, TANDEM_LIBRARY=lib),
                   "import tandem; print(tandem.library_origin())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == lib


def test_preloaded_library_is_preferred(py_env, build_dir, tmp_path):
    # Under srun --horovod=on the plugin preloads libtandem: that copy must be
    # used even when TANDEM_LIBRARY points elsewhere (two engines in one
    # process would be two worlds).
    lib = str(build_dir / "engine" / "libtandem.so")
    r = run_python(dict(py_env, LD_PRELOAD=lib, TANDEM_LIBRARY=str(tmp_path / "missing.so")),
                   "import tandem; print(tandem.library_origin())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "already loaded in the process"


def test_build_tree_config_points_at_the_build(py_env, build_dir):
    r = run_python(py_env, "import tandem; print(tandem.library_origin()); "
                           "print(tandem.build_info()['pmix'])")
    assert r.returncode == 0, r.stderr
    origin, pmix = r.stdout.split()
    assert origin == str(build_dir / "engine" / "libtandem.so")
    assert pmix[0].isdigit()


def test_dtype_values_are_checked_against_the_library(py_env):
    r = run_python(py_env, """
import tandem._dtypes as d, tandem._library as l
d.verify()
lib = l.library()
print(lib.tandem_dtype_size(d.FLOAT64), lib.tandem_dtype_size(d.BFLOAT16))
""")
    if "has no symbol tandem_dtype_size" in r.stderr:
        pytest.fail("libtandem lacks tandem_dtype_size (the data path is not merged yet)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["8", "2"]


def test_tandem_info_runs(build_dir):
    r = subprocess.run([str(build_dir / "tools" / "tandem-info")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "PyTorch" in r.stdout and "PMIx" in r.stdout and "NCCL" in r.stdout


def test_horovod_shim_exposes_the_api(py_env):
    names = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank",
             "cross_size", "cross_rank", "is_homogeneous", "allreduce", "allreduce_async",
             "allreduce_", "allreduce_async_", "grouped_allreduce", "grouped_allreduce_async",
             "grouped_allreduce_", "grouped_allreduce_async_", "allgather", "allgather_async",
             "grouped_allgather", "broadcast", "broadcast_", "broadcast_async",
             "broadcast_async_", "alltoall", "reducescatter", "grouped_reducescatter", "join",
             "barrier", "poll", "synchronize", "Average", "Sum", "Min", "Max", "Product",
             "ProcessSet", "add_process_set", "remove_process_set", "global_process_set",
             "Compression", "DistributedOptimizer", "broadcast_parameters",
             "broadcast_optimizer_state", "broadcast_object", "allgather_object",
             "SyncBatchNorm", "start_timeline", "stop_timeline", "mpi_built", "gloo_built",
             "nccl_built", "cuda_built", "mpi_enabled", "gloo_enabled"]
    r = run_python(py_env, "import horovod.torch as hvd; print(' '.join(n for n in %r "
                           "if not hasattr(hvd, n)))" % names)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", "missing from horovod.torch: " + r.stdout


def test_built_answers_are_truthful_without_gpu(py_env):
    r = run_python(py_env, "import horovod.torch as hvd; "
                           "print(hvd.mpi_built(), hvd.gloo_built(), hvd.gpu_available())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False"]  # no GPU on this machine

"""libtandem-preload.so, what the plugin puts on LD_PRELOAD (docs/containers.md):
it never stops a program, whatever happens to the engine, and the import
then says why there is no engine. Run on the host; the container tests
(tests/e2e/test_containers.py) do the same inside images."""

import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def shim(build_dir):
    path = build_dir / "engine" / "libtandem-preload.so"
    assert path.exists(), "%s is missing: run ninja" % path
    return str(path)


@pytest.fixture(scope="module")
def unloadable(tmp_path_factory):
    """A library that is found but cannot be loaded: its dependency is gone."""
    d = tmp_path_factory.mktemp("unloadable")
    (d / "dep.c").write_text("int dep(void) { return 1; }\n")
    (d / "bad.c").write_text("int dep(void);\nint tandem_version(void) { return dep(); }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libdep.so"), str(d / "dep.c")], check=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libtandem.so.0"), str(d / "bad.c"),
                    "-L" + str(d), "-ldep", "-Wl,--no-as-needed"], check=True)
    os.remove(d / "libdep.so")
    return str(d / "libtandem.so.0")


def run(env, *cmd):
    return subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=120)


def test_programs_run_when_the_engine_is_missing(py_env, shim, tmp_path):
    env = dict(py_env, LD_PRELOAD=shim, TANDEM_LIBRARY=str(tmp_path / "nowhere" / "libtandem.so.0"))
    for cmd in (["/bin/true"], ["sh", "-c", "echo ran"]):
        r = run(env, *cmd)
        assert r.returncode == 0 and r.stderr == "", r
    r = run(env, sys.executable, "-c", "import tandem; tandem.init()")
    assert r.returncode != 0
    assert "the Tandem engine is not visible" in r.stderr, r.stderr
    assert str(tmp_path / "nowhere" / "libtandem.so.0") in r.stderr


def test_programs_run_when_the_engine_cannot_load(py_env, shim, unloadable):
    # Preloaded itself, such a library stops every program (what the shim avoids).
    direct = run(dict(py_env, LD_PRELOAD=unloadable), "/bin/true")
    assert direct.returncode == 127, direct
    env = dict(py_env, LD_PRELOAD=shim, TANDEM_LIBRARY=unloadable)
    r = run(env, "/bin/true")
    assert r.returncode == 0 and r.stderr == "", r
    r = run(env, sys.executable, "-c", "import tandem; tandem.init()")
    assert r.returncode != 0
    assert "could not be loaded" in r.stderr and "libdep.so" in r.stderr, r.stderr


def test_shim_loads_the_engine(py_env, shim, build_dir):
    env = dict(py_env, LD_PRELOAD=shim, TANDEM_LIBRARY=str(build_dir / "engine" / "libtandem.so"))
    r = run(env, sys.executable, "-c", "import tandem; print(tandem.library_origin())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "already loaded in the process"


def test_shim_adds_the_packages_before_the_images_own_path(py_env, shim, build_dir, tmp_path):
    own = tmp_path / "image-site"
    own.mkdir()
    (own / "imagepkg.py").write_text("X = 1\n")
    env = dict(py_env, LD_PRELOAD=shim, TANDEM_LIBRARY=str(build_dir / "engine" / "libtandem.so"),
               TANDEM_PYTHONPATH=str(build_dir / "python"), PYTHONPATH=str(own))
    r = run(env, sys.executable, "-c",
            "import os, imagepkg, tandem; print(os.environ['PYTHONPATH'])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "%s:%s" % (build_dir / "python", own)
    # Already there: left as it is (no duplicate in child processes).
    env["PYTHONPATH"] = "%s:%s" % (own, build_dir / "python")
    r = run(env, sys.executable, "-c", "import os; print(os.environ['PYTHONPATH'])")
    assert r.stdout.strip() == env["PYTHONPATH"]

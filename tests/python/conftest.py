"""Fixtures for the Python tests that run without the Slurm cluster.

``--build-dir`` (default <repo>/build) is the Meson build tree: the package is
taken from <build>/python (its generated _config.py points at
<build>/engine/libtandem.so) and ranks are started with <build>/tools/tandem-run.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKERS = pathlib.Path(__file__).resolve().parent / "workers"


def pytest_addoption(parser):
    parser.addoption("--build-dir", default=str(ROOT / "build"),
                     help="Meson build tree (default: <repo>/build)")


def pytest_configure(config):
    # The worker module is imported by the tests to list its checks; it
    # imports horovod.torch, so the build tree's package must be importable.
    sys.path.insert(0, str(pathlib.Path(config.getoption("--build-dir")).resolve() / "python"))


@pytest.fixture(scope="session")
def build_dir(request):
    path = pathlib.Path(request.config.getoption("--build-dir")).resolve()
    if not (path / "python" / "tandem" / "__init__.py").exists():
        pytest.fail("%s has no python/tandem: run `ninja -C %s` first" % (path, path))
    return path


@pytest.fixture(scope="session")
def py_env(build_dir):
    """Environment for a child python that uses the build tree's package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(build_dir / "python")
    for key in ("TANDEM_LIBRARY", "LD_PRELOAD"):
        env.pop(key, None)
    return env


class Ranks:
    """Runs a worker script as N ranks through tandem-run."""

    def __init__(self, build_dir, env):
        self.launcher = build_dir / "tools" / "tandem-run"
        self.env = env

    def run(self, np, script, *args, timeout=240, env=None):
        if not self.launcher.exists():
            pytest.fail("%s is missing: the multi-rank tests need tandem-run "
                        "(tools/tandem-run.cc)" % self.launcher)
        cmd = [str(self.launcher), "-np", str(np), "--timeout", str(timeout),
               sys.executable, str(WORKERS / script)] + [str(a) for a in args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30,
                              env=dict(self.env, **(env or {})))


@pytest.fixture(scope="session")
def runtime_api(build_dir):
    """Skips (saying why) while the built libtandem lacks the runtime's C API
    (tandem_enqueue_*), i.e. before the runtime work is merged. Once the
    symbols exist every test that uses this fixture runs and must pass."""
    import ctypes
    lib = ctypes.CDLL(str(build_dir / "engine" / "libtandem.so"))
    if not hasattr(lib, "tandem_enqueue_allreduce"):
        pytest.skip("libtandem in %s has no runtime C API (tandem_enqueue_allreduce): the "
                    "runtime is not merged into this tree yet" % build_dir)


@pytest.fixture(scope="session")
def ranks(build_dir, py_env, runtime_api):
    return Ranks(build_dir, py_env)


DEADLOCK_CHECKS = ["diverged", "init_again", "slow_rank"]


@pytest.fixture
def deadlock_job(ranks):
    """Runs workers/deadlock.py on np ranks through one frontend ("torch",
    "tensorflow") and checks what every rank must print: each check passed on
    every rank, and one deadlock message, the same on all of them. A check
    time well below the slow rank's 4 s pause."""
    def run(np, frontend, timeout):
        result = ranks.run(np, "deadlock.py", frontend, timeout=timeout,
                           env={"TANDEM_DEADLOCK_CHECK_SECONDS": "0.5"})
        out = result.stdout + result.stderr
        assert result.returncode == 0, out[-4000:]
        for check in DEADLOCK_CHECKS:
            passed = sorted(int(r) for r in re.findall(
                r"^(?:\[\d+\] )?deadlock PASS %s rank (\d+)$" % check, result.stdout, re.M))
            assert passed == list(range(np)), (check, out[-4000:])
        messages = set(re.findall(r"deadlock message rank \d+: (.*)$", result.stdout, re.M))
        assert len(messages) == 1, "one message on every rank: %s" % messages
    return run


_SWEEPS = {}  # (np, frontend) -> the finished job


def sweep(ranks, np, frontend):
    """workers/sweep_dtypes.py through one frontend on np ranks, run once."""
    if (np, frontend) not in _SWEEPS:
        _SWEEPS[np, frontend] = ranks.run(np, "sweep_dtypes.py", frontend, timeout=600)
    return _SWEEPS[np, frontend]


def assert_passed(result, np, name):
    """One check of a report.py worker passed on every rank, and failed nowhere."""
    output = result.stdout + result.stderr
    failures = re.findall(r"^.*FAIL %s rank \d+: .*$" % name, result.stdout, re.M)
    assert not failures, "\n".join(failures) + "\n" + output[-4000:]
    passed = set(int(r) for r in re.findall(r"^(?:\[\d+\] )?PASS %s rank (\d+)$" % name,
                                            result.stdout, re.M))
    assert passed == set(range(np)), "check %s passed on ranks %s of %d; job exit %d:\n%s" % (
        name, sorted(passed), np, result.returncode, output[-4000:])

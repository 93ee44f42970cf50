"""End-to-end fixtures: one real Slurm cluster per test run.

Run with ``/usr/bin/python3 -m pytest tests/e2e --build-dir BUILD`` (as root;
contrib/test.sh does this). The session starts a 3-node cluster with
contrib/cluster/start.sh under a unique instance name (``e2e<pid>``, so runs
by several people or a crashed earlier run do not collide) and always stops
it with stop.sh, which removes every daemon, namespace, bridge and file.

Fixtures
--------
``build_dir`` (session): pathlib.Path of the build tree (``--build-dir``).

``cluster`` (session): a :class:`Cluster`. Its API:

* ``cluster.srun(*args, env=None, timeout=60, immediate=10)`` ->
  ``subprocess.CompletedProcess`` (text stdout/stderr, returncode). Runs
  ``srun --immediate=<immediate> <args>`` against the cluster; ``env`` adds
  to (or, with value ``None``, removes from) the environment. A step that
  outlives ``timeout`` is killed and the test fails with its output.
* ``cluster.run(cmd, env=None, timeout=60)`` -> ``CompletedProcess``: any
  client command (salloc, scontrol, squeue, ...) against the cluster, run in a
  scratch folder under the cluster dir.
* ``cluster.task_envs(*srun_args, env=None, timeout=60)`` -> list of dicts, one
  per task, sorted by SLURM_PROCID: the complete environment each task was
  exec'd with (written as JSON by /usr/bin/python3, one file per task).
* ``cluster.sbatch(script, args=(), env=None, timeout=60)`` -> ``Batch``
  (job_id, state, exit_code, output, stderr). Submits ``script`` (text; a
  ``#!/bin/bash`` line is added when missing), then polls ``scontrol`` every
  200 ms: ``sbatch --wait`` polls only every few seconds, which a test
  would wait out. On timeout the job is cancelled and the test fails.
* ``cluster.client_env(plugin_args)`` -> env dict for srun/sbatch that points
  at a copy of the cluster's slurm.conf whose plugstack.conf passes
  ``plugin_args`` (list of ``key=value``) instead. It changes only what the
  clients (srun, sbatch: the local and allocator contexts) load, so a bad
  plugstack argument is tested without restarting the daemons.
* Attributes: ``name``, ``dir``, ``build``, ``root``, ``nodes`` (3),
  ``cpus`` (per node), ``gpus`` (per node), ``engine`` (libtandem.so path),
  ``preload`` (libtandem-preload.so, what the plugin puts on LD_PRELOAD),
  ``python_dir``, ``plugin_args`` (the cluster's plugstack arguments),
  ``env`` (os.environ plus SLURM_CONF).

``TANDEM_E2E_PLUGIN_ARGS`` (space separated ``key=value``) adds plugstack
arguments to the session cluster, e.g. a topology XML for binding tests.

Framework interpreters
----------------------
``--python=NAME=PATH`` (repeatable) lists the Python interpreters the
framework tests run with; default: ``--python=debian=/usr/bin/python3``.
Write it (and ``--build-dir=DIR``) as one word: Debian's pytest 7.2 takes a
separate value of a conftest's option for a test path and then stops with
"unrecognized arguments".
contrib/test.sh passes Debian's and every venv of
contrib/install-python-envs.sh (``torch2``, ``tf``, ``tfkeras``, ``tf215``). A test asks for one
framework by taking one of these fixture arguments, and runs once per listed
interpreter that has the framework's module (found with
``importlib.util.find_spec`` in that interpreter, without importing it):

* ``torch_python``: the interpreters with ``torch``;
* ``tf_python``: the interpreters with ``tensorflow`` and Keras 3;
* ``keras2_python``: the interpreters with ``tensorflow`` and Keras 2
  (``tf_keras``, run with ``TF_USE_LEGACY_KERAS=1``, or a 2.x ``keras``):
  contrib/install-python-envs.sh's ``tfkeras`` and ``tf215``;
* ``keras_python``: every interpreter with ``tensorflow``, whichever its
  Keras, for what is written once for both; the ``keras_env`` fixture gives
  the environment that makes its processes use its Keras 2
  (``TF_USE_LEGACY_KERAS=1`` where that is ``tf_keras``).

Each value is the interpreter's path (str); the test id is its NAME
(``test_x[torch2]``). With no interpreter for a framework the test is
reported as skipped. A new framework is one line in ``FRAMEWORK_FIXTURES``.
``any_torch_python`` is the first interpreter with torch, not parametrized:
for tests of the plugin that need torch but not every version of it.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NODES = 3
CPUS = 8
GPUS = 4
SRUN_QUEUE_LINE = re.compile(r"^srun: job \d+ "
                             r"(queued and waiting for resources|has been allocated resources)$")
DEFAULT_PYTHONS = ["debian=/usr/bin/python3"]
# fixture argument -> the module an interpreter must have to serve it
FRAMEWORK_FIXTURES = {"torch_python": "torch", "tf_python": "tensorflow",
                      "keras2_python": "tensorflow", "keras_python": "tensorflow"}
# fixture argument -> whether the interpreter's Keras must be Keras 2 (True)
# or must not be (False); absent: either.
KERAS2_FIXTURES = {"tf_python": False, "keras2_python": True}
KERAS2_PROBE = ("import importlib.util, importlib.metadata as m, sys\n"
                "try:\n    v = m.version('keras')\nexcept m.PackageNotFoundError:\n    v = ''\n"
                "sys.exit(0 if importlib.util.find_spec('tf_keras') or v.startswith('2.') else 1)")


def pytest_addoption(parser):
    parser.addoption("--build-dir", default=str(ROOT / "build"),
                     help="Meson build tree with the plugin and engine (default: <repo>/build)")
    parser.addoption("--python", action="append", default=[], metavar="NAME=PATH",
                     help="a framework interpreter for the Python tests (repeatable; default: "
                          + " ".join(DEFAULT_PYTHONS) + ")")


def framework_interpreters(config):
    """[(name, path)] from --python, in the order given; a malformed option or
    a path that does not run stops the session with the reason."""
    cached = getattr(config, "_tandem_pythons", None)
    if cached is not None:
        return cached
    out = []
    for item in config.getoption("--python") or DEFAULT_PYTHONS:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise pytest.UsageError(f"--python {item!r}: expected NAME=PATH")
        if any(name == n for n, _ in out):
            raise pytest.UsageError(f"--python {item!r}: the name {name!r} is given twice")
        if not os.access(path, os.X_OK):
            raise pytest.UsageError(f"--python {item!r}: {path} is not an executable")
        out.append((name, path))
    config._tandem_pythons = out
    return out


def _has_module(config, path, module):
    cache = config.__dict__.setdefault("_tandem_has_module", {})
    if (path, module) not in cache:
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        r = subprocess.run([path, "-c", probe], capture_output=True, text=True, timeout=60)
        if r.returncode not in (0, 1):
            raise pytest.UsageError(f"--python {path} does not run ({r.returncode}): {r.stderr}")
        cache[(path, module)] = r.returncode == 0
    return cache[(path, module)]


def _has_keras2(config, path):
    cache = config.__dict__.setdefault("_tandem_has_keras2", {})
    if path not in cache:
        r = subprocess.run([path, "-c", KERAS2_PROBE], capture_output=True, text=True,
                           timeout=60)
        cache[path] = r.returncode == 0
    return cache[path]


@pytest.fixture
def keras_env(request, keras_python):
    """The environment keras_python's processes need to serve the Keras the
    interpreter is there for: TensorFlow's TF_USE_LEGACY_KERAS=1 where that
    is tf_keras (TF 2.16+); nothing for TF <= 2.15's Keras 2 or for Keras 3."""
    if _has_module(request.config, keras_python, "tf_keras"):
        return {"TF_USE_LEGACY_KERAS": "1"}
    return {}


def pytest_generate_tests(metafunc):
    for fixture, module in FRAMEWORK_FIXTURES.items():
        if fixture in metafunc.fixturenames:
            keras2 = KERAS2_FIXTURES.get(fixture)
            pythons = [(n, p) for n, p in framework_interpreters(metafunc.config)
                       if _has_module(metafunc.config, p, module)
                       and (keras2 is None or _has_keras2(metafunc.config, p) == keras2)]
            metafunc.parametrize(fixture, [p for _, p in pythons], ids=[n for n, _ in pythons])


@dataclass
class Batch:
    job_id: int
    state: str
    exit_code: str
    output: str
    stderr: str


class Cluster:
    def __init__(self, name, build, plugin_args):
        self.name = name
        self.root = ROOT
        self.build = build
        self.dir = build / "cluster" / name
        self.nodes, self.cpus, self.gpus = NODES, CPUS, GPUS
        self.engine = str(build / "engine" / "libtandem.so")
        self.preload = str(build / "engine" / "libtandem-preload.so")
        # What start.sh passes as python=: the packages Meson laid out in the build.
        self.python_dir = str(build / "python")
        self.plugin_args = list(plugin_args)
        # The harness's own variables are not the user's environment: srun
        # would carry them into every task, where the plugin tests check
        # that nothing TANDEM_* arrives that the plugin did not set.
        harness = {"TANDEM_HOROVOD_CHECKOUT"}
        self.env = {k: v for k, v in os.environ.items() if k not in harness}
        self.env["SLURM_CONF"] = str(self.dir / "slurm.conf")
        self._scratch = self.dir / "e2e"
        self._count = 0

    # ------------------------------------------------------------- lifecycle
    def _script(self, which):
        return [str(ROOT / "contrib" / "cluster" / which), "--name", self.name,
                "--build", str(self.build), "--dir", str(self.dir)]

    def start(self):
        cmd = self._script("start.sh") + ["--nodes", str(NODES), "--cpus", str(CPUS),
                                          "--gpus", str(GPUS)]
        for a in self.plugin_args:
            cmd += ["--plugin-arg", a]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, TANDEM_PLUGIN_ARGS=""))
        if r.returncode != 0:
            raise RuntimeError(f"start.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        self._scratch.mkdir()

    def stop(self):
        r = subprocess.run(self._script("stop.sh"), capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"stop.sh failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")

    # ------------------------------------------------------------- helpers
    def _env(self, extra):
        env = dict(self.env)
        for k, v in (extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, cmd, env=None, timeout=60):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=self._env(env), cwd=self._scratch)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{' '.join(cmd)} ran past {timeout}s\nstdout: {e.stdout}\nstderr: {e.stderr}")

    def srun(self, *args, env=None, timeout=60, immediate=10):
        r = self.run(["srun", f"--immediate={immediate}", *args], env, timeout)
        # --immediate lets a step wait for the previous test's nodes; srun's
        # two lines about that wait are the scheduler's, not the program's.
        r.stderr = "".join(line for line in r.stderr.splitlines(keepends=True)
                           if not SRUN_QUEUE_LINE.match(line))
        return r

    def task_envs(self, *srun_args, env=None, timeout=60):
        # One file per task: srun interleaves long lines of several tasks.
        self._count += 1
        out = self._scratch / f"env{self._count}"
        out.mkdir()
        dump = "import json, os; print(json.dumps(dict(os.environ)))"
        r = self.srun(f"--output={out}/%t.json", *srun_args, "/usr/bin/python3", "-c", dump,
                      env=env, timeout=timeout)
        assert r.returncode == 0, f"srun {srun_args} failed ({r.returncode}):\n{r.stderr}"
        envs = [json.loads(p.read_text()) for p in out.glob("*.json")]
        return sorted(envs, key=lambda e: int(e["SLURM_PROCID"]))

    def sbatch(self, script, args=(), env=None, timeout=60):
        self._count += 1
        path = self._scratch / f"job{self._count}.sh"
        if not script.startswith("#!"):
            script = "#!/bin/bash\n" + script
        path.write_text(script)
        out = self._scratch / f"job{self._count}.out"
        err = self._scratch / f"job{self._count}.err"
        r = self.run(["sbatch", "--parsable", "-o", str(out), "-e", str(err), *args, str(path)],
                      env, 30)
        if r.returncode != 0:
            return Batch(0, "REJECTED", str(r.returncode), r.stdout, r.stderr)
        job_id = int(r.stdout.strip().split(";")[0])
        deadline = time.monotonic() + timeout
        while True:
            q = self.run(["scontrol", "-o", "show", "job", str(job_id)], None, 30)
            fields = dict(f.split("=", 1) for f in q.stdout.split() if "=" in f)
            state = fields.get("JobState", "")
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                break
            if time.monotonic() > deadline:
                self.run(["scancel", str(job_id)], None, 30)
                pytest.fail(f"job {job_id} still {state} after {timeout}s:\n{q.stdout}")
            time.sleep(0.2)
        read = lambda p: p.read_text() if p.exists() else ""  # noqa: E731
        return Batch(job_id, state, fields.get("ExitCode", ""), read(out), read(err))

    def client_env(self, plugin_args):
        self._count += 1
        alt = self._scratch / f"conf{self._count}"
        alt.mkdir()
        words = (self.dir / "plugstack.conf").read_text().split()
        # "required <plugin> key=value...": keep the plugin, replace the arguments
        (alt / "plugstack.conf").write_text(" ".join(words[:2] + list(plugin_args)) + "\n")
        conf = (self.dir / "slurm.conf").read_text().replace(
            f"PlugStackConfig={self.dir}/plugstack.conf", f"PlugStackConfig={alt}/plugstack.conf")
        (alt / "slurm.conf").write_text(conf)
        shutil.copy(self.dir / "gres.conf", alt / "gres.conf")
        return {"SLURM_CONF": str(alt / "slurm.conf")}


@pytest.fixture(scope="session")
def any_torch_python(request):
    for _, path in framework_interpreters(request.config):
        if _has_module(request.config, path, "torch"):
            return path
    pytest.skip("no --python interpreter has torch")


@pytest.fixture(scope="session")
def build_dir(request):
    build = pathlib.Path(request.config.getoption("--build-dir")).resolve()
    if not (build / "plugin" / "tandem_spank.so").exists():
        pytest.exit(f"{build}/plugin/tandem_spank.so not found: build first (ninja -C {build})", 2)
    return build


@pytest.fixture(scope="session")
def cluster(build_dir):
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster needs root (network namespaces)")
    extra = os.environ.get("TANDEM_E2E_PLUGIN_ARGS", "").split()
    c = Cluster(f"e2e{os.getpid()}", build_dir, extra)
    try:
        c.start()
        yield c
    finally:
        c.stop()

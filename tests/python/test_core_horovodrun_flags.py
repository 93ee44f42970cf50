"""horovodrun's command line against Horovod 0.28.1's own parser.

Horovod's parse_args (module horovod.runner.launch) is read from a checkout at
test time and its add_argument calls are parsed with ast, not imported: every
option it declares must be a row of Tandem's table, under the same argparse
destination; every refused row must stop horovodrun with its message before
anything runs; the honoured ones must reach the ranks as the variables the
table says. Cheap: single-rank jobs of `true` or a one-line python.
"""

import ast
import json
import os
import subprocess
import sys

import pytest

from workers import horovod_checkout

PYTHON = "/usr/bin/python3"  # what horovodrun runs with (tools/meson.build)

# Nothing here runs with the interpreter that runs pytest: the venvs'
# registrations of the suite would repeat the same runs.
pytestmark = pytest.mark.skipif(sys.executable != PYTHON and
                                os.path.realpath(sys.executable) != os.path.realpath(PYTHON),
                                reason="horovodrun runs with %s; its registration covers this"
                                % PYTHON)


@pytest.fixture(scope="module")
def horovodrun(build_dir):
    path = build_dir / "tools" / "horovodrun"
    if not path.exists():
        pytest.fail("%s is missing: build first" % path)
    return str(path)


@pytest.fixture(scope="module")
def table(build_dir):
    sys.path.insert(0, str(build_dir / "python"))
    from tandem._horovodrun import flags
    return flags


def env_outside_slurm(py_env, **extra):
    env = {k: v for k, v in py_env.items() if not k.startswith("SLURM_")}
    env.update(extra)
    return env


def horovod_options():
    """{option string: dest} of every add_argument in Horovod's parse_args."""
    tree = ast.parse(horovod_checkout.show("horovod/runner/launch.py"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args")
    found = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant)]
        options = [n for n in names if n.startswith("-")]
        if not options:
            continue  # the positional `command`
        dest = next((k.value.value for k in node.keywords if k.arg == "dest"), None)
        if dest is None:  # argparse's rule: the first long option, dashes to underscores
            longs = [o for o in options if o.startswith("--")] or options
            dest = longs[0].lstrip("-").replace("-", "_")
        for o in options:
            found[o] = dest
    return found


def test_every_horovod_option_is_honoured_or_refused(table):
    theirs = horovod_options()
    assert len(theirs) > 60, "parse_args changed shape: %d options found" % len(theirs)
    ours = {o: f.dest for o, f in table.by_option().items()}
    assert sorted(set(theirs) - set(ours)) == [], "Horovod options with no row"
    assert sorted(set(ours) - set(theirs)) == [], "rows for options Horovod does not have"
    assert {o: ours[o] for o in theirs} == theirs, "a row's destination differs from Horovod's"


def _value_args(row, table):
    if row.kind != table.STORE:
        return []
    if row.nargs == 2:
        return ["1", "2"]
    return ["1" if row.type in (int, float) else "x"]


def test_each_refused_flag_stops_with_its_message(table, horovodrun, py_env, tmp_path):
    marker = tmp_path / "ran"
    refused = [(o, f) for f in table.FLAGS if f.refused for o in f.options]
    assert len(refused) >= 12
    for option, row in refused:
        r = subprocess.run([horovodrun, option, *_value_args(row, table), "-np", "1", "touch",
                            str(marker)], capture_output=True, text=True, timeout=60,
                           env=env_outside_slurm(py_env))
        assert r.returncode == 2, (option, r.stderr)
        assert "horovodrun ERROR tools: %s: %s" % (option, row.refused) in r.stderr, option
        assert not marker.exists(), "%s: the job ran" % option


def test_honoured_flags_reach_the_ranks(horovodrun, py_env, tmp_path):
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    timeline = str(tmp_path / "timeline.json")
    r = subprocess.run(
        [horovodrun, "-np", "1", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2.5",
         "--cache-capacity", "7", "--timeline-filename", timeline, "--timeline-mark-cycles",
         "--no-stall-check", "--stall-check-shutdown-time-seconds", "90", "--tcp",
         "--gloo-timeout-seconds", "44", "--log-level", "ERROR", "--start-timeout", "33",
         "--network-interface", "lo", "--gloo", "--hierarchical-allreduce", "--disable-cache",
         PYTHON, "-c", dump], capture_output=True, text=True, timeout=60,
        env=env_outside_slurm(py_env, HOROVODRUN_TEST_MARK="passed"))
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith("[0]<stdout>:"), line
    env = json.loads(line[len("[0]<stdout>:"):])
    expected = {"HOROVOD_FUSION_THRESHOLD": str(32 * 1024 * 1024), "HOROVOD_CYCLE_TIME": "2.5",
                "HOROVOD_CACHE_CAPACITY": "7", "HOROVOD_TIMELINE": timeline,
                "HOROVOD_TIMELINE_MARK_CYCLES": "1", "HOROVOD_STALL_CHECK_TIME_SECONDS": "0",
                "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "90", "NCCL_IB_DISABLE": "1",
                "TANDEM_TIMEOUT": "44", "HOROVOD_LOG_LEVEL": "ERROR",
                "TANDEM_BOOTSTRAP_TIMEOUT": "33", "TANDEM_TCP_IFNAME": "lo",
                "NCCL_SOCKET_IFNAME": "lo", "HOROVODRUN_TEST_MARK": "passed",
                "HOROVOD_SIZE": "1"}
    assert {k: env.get(k) for k in expected} == expected


def test_autotune_flags_reach_the_ranks_and_need_autotune(horovodrun, py_env, tmp_path):
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    log = str(tmp_path / "autotune.csv")
    r = subprocess.run(
        [horovodrun, "-np", "1", "--autotune", "--autotune-log-file", log,
         "--autotune-warmup-samples", "2", "--autotune-steps-per-sample", "4",
         "--autotune-bayes-opt-max-samples", "6", "--autotune-gaussian-process-noise", "0.5",
         PYTHON, "-c", dump], capture_output=True, text=True, timeout=60,
        env=env_outside_slurm(py_env))
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout.strip()[len("[0]<stdout>:"):])
    expected = {"HOROVOD_AUTOTUNE": "1", "HOROVOD_AUTOTUNE_LOG": log,
                "HOROVOD_AUTOTUNE_WARMUP_SAMPLES": "2", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE": "4",
                "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES": "6",
                "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE": "0.5"}
    assert {k: env.get(k) for k in expected} == expected
    # Without --autotune its parameters would do nothing: refused, as --max-np without --min-np.
    for args in (["--autotune-log-file", log], ["--no-autotune", "--autotune-warmup-samples", "2"]):
        r = subprocess.run([horovodrun, "-np", "1", *args, "true"], capture_output=True,
                           text=True, timeout=60, env=env_outside_slurm(py_env))
        assert r.returncode == 2, (args, r.stderr)
        flag = [a for a in args if a.startswith("--autotune-")][0]
        assert "%s applies while autotune runs, which --autotune turns on" % flag in r.stderr, \
            r.stderr


def test_bad_values_are_refused_before_starting(horovodrun, py_env):
    for args, says in ((["--network-interfaces", "eth0,eth1"], "listens on one interface"),
                       (["--max-np", "4"], "--max-np applies to an elastic job"),
                       (["--fusion-threshold-mb", "-1"], "must be 0 or more"),
                       (["--autotune", "--autotune-steps-per-sample", "-1"],
                        "--autotune-steps-per-sample -1: must be 0 or more"),
                       (["-H", "a:2,a:2"], "listed twice"),
                       (["-H", "a:x"], "is not host or host:slots")):
        r = subprocess.run([horovodrun, "-np", "1", *args, "true"], capture_output=True,
                           text=True, timeout=60, env=env_outside_slurm(py_env))
        assert r.returncode == 2 and says in r.stderr, (args, r.stderr)


def test_config_file_is_horovods_yaml(horovodrun, py_env, tmp_path):
    if not _importable("yaml"):
        pytest.skip("%s cannot import yaml (python3-yaml), which --config-file needs" % PYTHON)
    good = tmp_path / "good.yaml"
    good.write_text("controller: gloo\nparams:\n  fusion_threshold_mb: 8\n  cycle_time_ms: 3\n"
                    "stall_check:\n  enabled: false\nlogging:\n  level: info\n")
    show = "import os; print(os.environ['HOROVOD_FUSION_THRESHOLD'], " \
           "os.environ['HOROVOD_CYCLE_TIME'], os.environ['HOROVOD_STALL_CHECK_TIME_SECONDS'], " \
           "os.environ['HOROVOD_LOG_LEVEL'])"
    r = subprocess.run([horovodrun, "-np", "1", "--config-file", str(good),
                        "--cycle-time-ms", "5", PYTHON, "-c", show], capture_output=True,
                       text=True, timeout=60, env=env_outside_slurm(py_env))
    assert r.returncode == 0, r.stderr
    # the command line's --cycle-time-ms wins over the file's, as in Horovod
    assert r.stdout.strip() == "[0]<stdout>:%d 5.0 0 info" % (8 * 1024 * 1024)
    for text, says in (("params:\n  hierarchical_allreduce: false\n",
                        "params.hierarchical_allreduce in %s (--no-hierarchical-allreduce): "
                        "Tandem's allreduce is always hierarchical"),
                       ("autotune:\n  log_file: x.csv\n",
                        "--autotune-log-file applies while autotune runs"),
                       ("params:\n  fusion_mb: 8\n", "unknown key 'params.fusion_mb'")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        r = subprocess.run([horovodrun, "-np", "1", "--config-file", str(bad), "true"],
                           capture_output=True, text=True, timeout=60,
                           env=env_outside_slurm(py_env))
        assert r.returncode == 2, r.stderr
        assert (says % bad if "%s" in says else says) in r.stderr, r.stderr


def _importable(module):
    return subprocess.run([PYTHON, "-c", "import %s" % module], capture_output=True,
                          timeout=120).returncode == 0


def test_check_build_tells_the_truth(horovodrun, py_env):
    # One run, with --verbose: Horovod's layout after a blank line, then the reasons.
    r = subprocess.run([horovodrun, "-cb", "--verbose"], capture_output=True, text=True,
                       timeout=120, env=env_outside_slurm(py_env))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["", "Horovod v0.28.1+tandem:"]
    mark = lambda ok: "[X]" if ok else "[ ]"  # noqa: E731
    assert "    %s PyTorch" % mark(_importable("torch")) in lines
    assert "    %s TensorFlow" % mark(_importable("tensorflow")) in lines
    assert "    [ ] MXNet" in lines
    gpu = subprocess.run([PYTHON, "-c", "from tandem import _collectives; "
                          "print(_collectives.gpu_available()[0])"], capture_output=True,
                         text=True, timeout=60, env=py_env)
    nccl = gpu.returncode == 0 and gpu.stdout.strip() == "True"
    assert "    %s NCCL" % mark(nccl) in lines
    heads = [ln for ln in lines if ln.endswith(":") and not ln.startswith(" ")]
    assert heads == ["Horovod v0.28.1+tandem:", "Available Frameworks:",
                     "Available Controllers:", "Available Tensor Operations:"]
    assert "NCCL: %s" % ("usable" if nccl else "not usable") in r.stdout


def test_outside_slurm_a_host_that_does_not_resolve_is_named(horovodrun, py_env, tmp_path):
    marker = tmp_path / "ran"
    r = subprocess.run([horovodrun, "-np", "3", "-H", "localhost:1,elsewhere.invalid:2", "touch",
                        str(marker)], capture_output=True, text=True, timeout=60,
                       env=env_outside_slurm(py_env))
    assert r.returncode == 2, r.stderr
    assert "these hosts cannot be reached:" in r.stderr, r.stderr
    assert "tools:   elsewhere.invalid: the name does not resolve" in r.stderr, r.stderr
    assert not marker.exists()


def test_ssh_flags_without_an_ssh_session_are_refused(horovodrun, py_env, tmp_path):
    """-p and -i apply to other hosts' ranks: on this host alone, or
    inside an allocation, they are refused, not ignored."""
    key = tmp_path / "key"
    key.write_text("")
    for flag in (["-p", "2222"], ["--ssh-identity-file", str(key)]):
        r = subprocess.run([horovodrun, *flag, "-np", "1", "-H", "localhost:1", "true"],
                           capture_output=True, text=True, timeout=60,
                           env=env_outside_slurm(py_env))
        assert r.returncode == 2, r.stderr
        assert ("horovodrun ERROR tools: %s: every rank of this job runs on this host, so no "
                "ssh session starts; drop the flag" % flag[0]) in r.stderr, r.stderr
    env = fake_slurm(tmp_path, py_env, ["node1", "node2"], "2(x2)")
    r = subprocess.run([horovodrun, "-p", "2222", "-np", "2", "true"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert r.returncode == 2, r.stderr
    assert ("-p: inside a Slurm allocation srun starts every rank, so no ssh session starts"
            in r.stderr), r.stderr


def test_bad_ssh_values_are_refused(horovodrun, py_env, tmp_path):
    for flag, said in ((["-p", "70000"], "--ssh-port 70000: expected a TCP port, 1 to 65535"),
                       (["-i", str(tmp_path / "nokey")], "--ssh-identity-file %s: no such file"
                        % (tmp_path / "nokey"))):
        r = subprocess.run([horovodrun, *flag, "-np", "2", "-H", "elsewhere.invalid:2", "true"],
                           capture_output=True, text=True, timeout=60,
                           env=env_outside_slurm(py_env))
        assert r.returncode == 2 and said in r.stderr, (flag, r.stderr)


def test_ssh_rank_places_and_forwards_as_horovod(build_dir, monkeypatch):
    """The launcher's side of one remote rank: -H's layout in Horovod's
    variables, Horovod's excluded names left out, the store's address on
    the route to the host."""
    sys.path.insert(0, str(build_dir / "python" / "tandem" / "_horovodrun"))
    import ssh_rank
    hosts = [("127.0.0.2", 2), ("hostb", 3)]
    assert [ssh_rank.place(hosts, r) for r in range(5)] == [
        ("127.0.0.2", 0, 2, 0, 2), ("127.0.0.2", 1, 2, 0, 2), ("hostb", 0, 3, 1, 2),
        ("hostb", 1, 3, 1, 2), ("hostb", 2, 3, 1, 2)]
    environ = {"TANDEM_RANK": "1", "TANDEM_RENDEZVOUS_ADDR": "127.0.0.1:4242", "KEEP": "x",
               "OLDPWD": "/", "BASH_FUNC_f%%": "()", "CUDA_VISIBLE_DEVICES": "0",
               "HOROVOD_SECRET_KEY": "s"}
    env, host = ssh_rank.rank_environment(environ, hosts, set())
    assert host == "127.0.0.2"
    assert env["TANDEM_RENDEZVOUS_ADDR"] == "127.0.0.1:4242"  # the route to 127.0.0.2 is lo
    assert env["KEEP"] == "x" and env["PYTHONUNBUFFERED"] == "1"
    assert not {"OLDPWD", "BASH_FUNC_f%%", "CUDA_VISIBLE_DEVICES", "HOROVOD_SECRET_KEY"} & set(env)
    assert (env["HOROVOD_HOSTNAME"], env["HOROVOD_LOCAL_RANK"], env["HOROVOD_LOCAL_SIZE"],
            env["HOROVOD_CROSS_RANK"], env["HOROVOD_CROSS_SIZE"]) == ("127.0.0.2", "1", "2", "0",
                                                                      "2")


def test_version(horovodrun, py_env):
    r = subprocess.run([horovodrun, "--version"], capture_output=True, text=True, timeout=60,
                       env=env_outside_slurm(py_env))
    assert (r.returncode, r.stdout.strip()) == (0, "0.28.1+tandem")


def fake_slurm(tmp_path, py_env, nodes, cpus, **extra):
    """An allocation's environment with srun and scontrol replaced by
    scripts: srun prints, as one labelled line of task 0, its arguments, the
    variables horovodrun gives it and its SLURM_HOSTFILE's lines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho %s\n" % " ".join(nodes))
    (bin_dir / "srun").write_text(
        "#!/usr/bin/python3\nimport json, os, sys\n"
        "hf = os.environ.get('SLURM_HOSTFILE')\n"
        "print('0: ' + json.dumps({'argv': sys.argv[1:], 'hosts': open(hf).read().split() "
        "if hf else None, 'per_node': os.environ.get('SLURM_NTASKS_PER_NODE'), "
        "'min_np': os.environ.get('TANDEM_ELASTIC_MIN_NP')}))\n")
    for f in ("scontrol", "srun"):
        (bin_dir / f).chmod(0o755)
    env = env_outside_slurm(py_env, SLURM_JOB_ID="7", SLURM_JOB_NODELIST="node[1-3]",
                            SLURM_JOB_CPUS_PER_NODE=cpus, SLURM_NTASKS_PER_NODE="2",
                            PATH="%s:%s" % (bin_dir, py_env["PATH"]), **extra)
    return env


def srun_sees(horovodrun, env, *args):
    r = subprocess.run([horovodrun, *args, "python", "train.py"], capture_output=True,
                       text=True, timeout=60, env=env)
    if r.returncode != 0:
        return r.returncode, r.stderr
    assert r.stdout.startswith("[0]<stdout>:"), (r.stdout, r.stderr)
    return 0, json.loads(r.stdout[len("[0]<stdout>:"):])


def test_inside_an_allocation_the_step_is_placed_as_h_says(horovodrun, py_env, tmp_path):
    env = fake_slurm(tmp_path, py_env, ["node1", "node2", "node3"], "4(x3)")
    base = ["--horovod=on", "--label", "--export=ALL"]
    rc, seen = srun_sees(horovodrun, env, "-np", "4", "-H", "node1:2,node2:2")
    assert rc == 0, seen
    assert seen["argv"] == base + ["--ntasks=4", "--nodes=2", "--nodelist=node1,node2",
                                       "--ntasks-per-node=2", "--distribution=block",
                                       "python", "train.py"]
    rc, seen = srun_sees(horovodrun, env, "-np", "5", "-H", "node1:2,node3:3")
    assert rc == 0, seen
    assert seen["argv"] == base + ["--ntasks=5", "--distribution=arbitrary", "python",
                                       "train.py"]
    assert seen["hosts"] == ["node1", "node1", "node3", "node3", "node3"]
    assert seen["per_node"] is None  # sbatch's --ntasks-per-node does not reach srun
    rc, seen = srun_sees(horovodrun, env, "-np", "3")
    assert (rc, seen["argv"]) == (0, base + ["--ntasks=3", "python", "train.py"])
    rc, seen = srun_sees(horovodrun, env, "--min-np", "2", "-np", "3", "--verbose")
    assert (rc, seen["argv"][0], seen["min_np"]) == (0, "--horovod=elastic", "2")
    rc, seen = srun_sees(horovodrun, env, "-np", "2", "--verbose", "--network-interface", "eth1")
    assert seen["argv"][0] == "--horovod=verbose"
    assert seen["argv"][-5:] == ["env", "NCCL_SOCKET_IFNAME=eth1", "TANDEM_TCP_IFNAME=eth1",
                                 "python", "train.py"]
    for args, says in (
            (["-np", "2", "-H", "node9:2"], "-H: host node9 is not in allocation 7 (its nodes: "
             "node1,node2,node3)"),
            (["-np", "2", "-H", "node1:8"], "-H node1:8: node node1 has 4 CPUs in allocation "
             "7, fewer than the 8 slots asked for"),
            (["-np", "9", "-H", "node1:4,node2:4"], "-np 9 asks for more ranks than the hosts "
             "have slots (8"),
            (["-np", "2", "-H", "localhost:2"], "-H localhost names this host, which is not a "
             "node of allocation 7")):
        rc, err = srun_sees(horovodrun, env, *args)
        assert rc == 2 and says in err, (args, err)
    rc, seen = srun_sees(horovodrun, dict(env, SLURMD_NODENAME="node2"), "-np", "2", "-H",
                         "localhost:2")
    assert rc == 0 and "--nodelist=node2" in seen["argv"], seen

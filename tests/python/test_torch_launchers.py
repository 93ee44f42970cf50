"""The launchers a Horovod user brings, on this host without Slurm:
horovod.run (Horovod's Python launcher) and Open MPI's mpirun, which the
engine joins through the PMIx server mpirun runs."""

import json
import shutil
import subprocess
import sys

import pytest

from conftest import WORKERS as WORKERS_DIR

sys.path.insert(0, str(WORKERS_DIR))
import launcher_output

pytest.importorskip("torch")


def run_main(py_env, case, timeout=120):
    r = subprocess.run([sys.executable, str(WORKERS_DIR / "run_function_main.py"), case],
                       capture_output=True, text=True, timeout=timeout, env=py_env)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_run_returns_every_ranks_result_by_rank(py_env, runtime_api):
    out, err = run_main(py_env, "identity")
    assert "results" in out, (out, err)
    # 10 + 11 + 12 on every rank, each result at its rank's index.
    assert out["results"] == [{"rank": r, "size": 3, "sum": 33.0} for r in range(3)]


def test_run_takes_lambdas_args_and_kwargs(py_env, runtime_api):
    pytest.importorskip("cloudpickle")
    out, err = run_main(py_env, "lambda")
    assert out == {"results": [42, 42]}, err


def test_a_rank_that_raises_fails_the_run_naming_it(py_env, runtime_api):
    out, _ = run_main(py_env, "fails")
    assert out["error"] == "RuntimeError"
    assert "rank 1 raised ValueError: rank one gives up" in out["message"]


@pytest.mark.parametrize("hosts, needle", [
    ("node7:2", "host 'node7' is not this host"),
    ("localhost:1", "num_proc=2 is more than the 1 slots of hosts='localhost:1'"),
])
def test_what_run_cannot_do_is_refused_before_starting(py_env, hosts, needle):
    out, _ = run_main(py_env, hosts)
    assert out["error"] == "ValueError"
    assert needle in out["message"]


def test_refused_parameters_name_themselves():
    import horovod
    for kwargs, needle in [({"hostfile": "hosts.txt"}, "hostfile is not supported"),
                           ({"min_np": 2}, "min_num_proc is not supported"),
                           ({"host_discovery_script": "d.sh"}, "tandem-run --elastic"),
                           ({"use_gloo": True, "use_mpi": True}, "use_gloo and use_mpi")]:
        with pytest.raises(ValueError, match=needle):
            horovod.run(print, **kwargs)


def test_mpirun_on_one_host_gives_ranks_local_ranks_and_the_sum(build_dir, py_env, runtime_api):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("Open MPI's mpirun is not installed")
    env = {k: v for k, v in py_env.items()
           if not k.startswith(("TANDEM_RANK", "TANDEM_SIZE", "TANDEM_RENDEZVOUS", "PMIX_",
                                "OMPI_"))}
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "PYTHONPATH",
           sys.executable, str(WORKERS_DIR / "identity_allreduce.py")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = launcher_output.rank_objects(r.stdout)
    assert [(d["rank"], d["local_rank"], d["size"], d["local_size"], d["sum"]) for d in lines] \
        == [(0, 0, 2, 2, 3.0), (1, 1, 2, 2, 3.0)], r.stderr

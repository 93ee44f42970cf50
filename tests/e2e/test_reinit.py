"""init -> finalize -> init in one process, 50 times with collectives in each
cycle, under real srun --horovod=on (PMIx) on 2 nodes at 1, 2 and 3 ranks:
the C API (tests/unit/api/reinit_job.cc) and hvd.init()/hvd.shutdown()
through horovod.torch (tests/python/workers/reinit.py). The same programs
run under tandem-run in the unit suite."""

import re

import pytest

LAYOUTS = [("-N", "1", "-n", "1"), ("-N", "2", "-n", "2"), ("-N", "2", "-n", "3")]


def ranks_done(stdout, pattern):
    return sorted(int(r) for r in re.findall(pattern, stdout, re.M))


@pytest.mark.parametrize("layout", LAYOUTS, ids=["1rank", "2ranks-2nodes", "3ranks-2nodes"])
def test_c_api_joins_and_leaves_fifty_times(cluster, layout):
    job = cluster.build / "tests" / "unit" / "api" / "reinit_job"
    r = cluster.srun(*layout, "--horovod=on", str(job), "50", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    size = int(layout[3])
    assert ranks_done(r.stdout, r"^rank (\d+): ok reinit 50 cycles$") == list(range(size)), \
        r.stdout + r.stderr


@pytest.mark.parametrize("layout", LAYOUTS[1:], ids=["2ranks-2nodes", "3ranks-2nodes"])
def test_horovod_torch_init_shutdown_fifty_times(cluster, layout):
    worker = cluster.root / "tests" / "python" / "workers" / "reinit.py"
    r = cluster.srun(*layout, "--horovod=on", "/usr/bin/python3", str(worker), "50",
                     timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    size = int(layout[3])
    assert ranks_done(r.stdout, r"^reinit ok rank (\d+) cycles 50$") == list(range(size)), \
        r.stdout + r.stderr

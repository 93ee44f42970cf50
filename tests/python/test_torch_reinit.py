"""hvd.init() -> hvd.shutdown() -> hvd.init(), 50 times in one process, with
an allreduce, a barrier and an allgather in each cycle, on 1, 2 and 3 ranks
started by tandem-run (workers/reinit.py; the same worker runs under srun in
tests/e2e/test_reinit.py). Before the bootstrap numbered its sessions, two
ranks hung in one run of two."""

import re

import pytest


@pytest.mark.parametrize("np", [1, 2, 3])
def test_init_shutdown_init_fifty_times(ranks, np):
    result = ranks.run(np, "reinit.py", 50, timeout=280)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    done = sorted(int(r) for r in re.findall(r"^(?:\[\d+\] )?reinit ok rank (\d+) cycles 50$",
                                             result.stdout, re.M))
    assert done == list(range(np)), out[-4000:]

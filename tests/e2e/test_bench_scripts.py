"""contrib/bench/compare-nodes.sh end to end, on a few small sizes: the
script starts its own 2-node cluster, runs tandem-bench and Open MPI under
srun, prints a table per run and per statistic, and always stops the
cluster. The series in README.md and docs/engine.md are made with it, so a
mistake in it (PIN=0 once ended the script before its tables, under set -e)
costs a whole series; this runs its default and its pinned mode in about a
minute."""

import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "contrib" / "bench" / "compare-nodes.sh"


def compare_nodes(build_dir, **settings):
    if not (build_dir / "tools" / "mpi-allreduce-bench").exists():
        pytest.skip("mpi-allreduce-bench is not built (no MPI found at setup)")
    env = dict(os.environ, GLOO="0", ITERS="20", SIZES="-b 1K -e 64K -f 8",
               LATENCY="-b 8 -e 8", RUN_TIMEOUT="120")
    env.update(settings)
    return subprocess.run([str(SCRIPT), str(build_dir)], env=env, capture_output=True,
                          text=True, timeout=600)


def tables(stdout):
    """{(heading, mode): {size: ratio}} for every table in the output."""
    found, heading, current = {}, None, None
    for line in stdout.splitlines():
        if line.startswith("run ") or line.endswith("runs per tool and size:"):
            heading = line.split(":")[0]
        elif "OUT OF PLACE" in line or "IN PLACE" in line:
            current = found.setdefault((heading, "out" if "OUT OF PLACE" in line else "in"), {})
        elif current is not None:
            m = re.match(r"^\s+(\d+[KMG]?)\s+[\d.]+ \([\d.]+\)\s+[\d.]+ \([\d.]+\)\s+([\d.]+)", line)
            if m:
                current[m.group(1)] = float(m.group(2))
    return found


ALLOWED = pathlib.Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
HOST_DEFAULT = pathlib.Path("/proc/sys/net/ipv4/tcp_congestion_control")


def test_pinned_runs_each_node_on_its_own_cpu_and_prints_every_table(build_dir):
    allowed_before = ALLOWED.read_text()
    r = compare_nodes(build_dir, PIN="1", REPEAT="2", STAT="best median", LINK="1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # CC defaults to cubic in every node's namespace, for both tools, and
    # the host's list of allowed controls is as it was afterwards.
    assert "congestion control: cubic on every node (CC=cubic)" in r.stdout, r.stdout[:2000]
    assert "over TCP (cubic)" in r.stdout
    assert ALLOWED.read_text() == allowed_before
    placement = re.search(r"^placement: (.*)$", r.stdout, re.M)
    assert placement, r.stdout[:2000]
    cpus = dict(item.split(":") for item in placement.group(1).split())
    assert sorted(cpus) == ["node1", "node2"], placement.group(0)
    if (os.cpu_count() or 1) >= 2:
        assert cpus["node1"] != cpus["node2"], placement.group(0)
        assert all(re.fullmatch(r"\d+", c) for c in cpus.values()), placement.group(0)
    assert "node i's rank pinned to CPU i mod" in r.stdout
    got = tables(r.stdout)
    for heading in ("run 1 of 2", "run 2 of 2", "best of 2 runs per tool and size",
                    "median of 2 runs per tool and size"):
        for mode in ("out", "in"):
            sizes = got.get((heading, mode))
            assert sizes is not None, f"no {mode}-of-place table under '{heading}':\n{r.stdout}"
            assert set(sizes) == {"8", "1K", "8K", "64K"}, (heading, mode, sizes)
            assert all(v > 0 for v in sizes.values()), (heading, mode, sizes)
    assert "link ceiling" in r.stdout


def test_default_is_unpinned_and_still_prints_its_tables(build_dir):
    r = compare_nodes(build_dir, REPEAT="1", MODES="in", LINK="0", CC="host")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "pinned" not in r.stdout
    # CC=host: the nodes keep what a new namespace inherits from the host.
    host = HOST_DEFAULT.read_text().strip()
    assert f"congestion control: {host} on every node (CC=host)" in r.stdout, r.stdout[:2000]
    placement = re.search(r"^placement: (.*)$", r.stdout, re.M)
    assert placement and "node1:" in placement.group(1) and "node2:" in placement.group(1), r.stdout
    got = tables(r.stdout)
    assert set(got.get(("run 1 of 1", "in"), {})) == {"8", "1K", "8K", "64K"}, r.stdout
    assert ("run 1 of 1", "out") not in got


def test_a_bad_setting_fails_before_anything_runs(build_dir):
    for name, value in (("PIN", "2"), ("STAT", "mean")):
        r = compare_nodes(build_dir, **{name: value})
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert f"{name} must be" in r.stderr and value in r.stderr, r.stderr
        assert "placement" not in r.stdout
    r = compare_nodes(build_dir, CC="nosuchcc")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "CC=nosuchcc is not a congestion control this kernel has" in r.stderr, r.stderr
    assert "placement" not in r.stdout

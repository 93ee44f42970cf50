"""The one log (engine/common/log.h, python/tandem/_log.py) under real
`srun --horovod=on` on two nodes of the local cluster: quiet by default,
TANDEM_LOG / TANDEM_LOG_SUBSYS select levels and subsystems on every rank,
lines carry the rank and node, TANDEM_LOG=info describes each rank's set-up,
and a bad value stops an enabled step at srun with one message."""

import re

# "tandem[r3 node2] INFO tcp: ..." and "... WARN tcp connector.cc:347: ..."
LINE = re.compile(r"^tandem\[r(\d+) (node\d+)\] (ERROR|WARN|INFO|DEBUG|TRACE) (\w+)"
                  r"(?: [\w.-]+:\d+)?: (.*)$")


def bench(cluster, *args, env=None):
    exe = cluster.build / "tools" / "tandem-bench"
    return cluster.srun("-N", "2", "-n", "4", "--ntasks-per-node=2", "--horovod=on", str(exe),
                        "-b", "8", "-e", "64K", "-f", "64", "-n", "5", "-w", "1", *args,
                        env=env, timeout=120)


def parsed(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines, [LINE.match(line) for line in lines]


def test_quiet_by_default(cluster):
    r = bench(cluster, env={"TANDEM_LOG": None, "TANDEM_LOG_SUBSYS": None})
    assert r.returncode == 0, r.stderr
    assert "Out of bounds values : 0 OK" in r.stdout, r.stdout
    assert r.stderr.strip() == "", r.stderr


def test_debug_of_one_subsystem_prints_only_its_lines_with_rank_prefixes(cluster):
    r = bench(cluster, env={"TANDEM_LOG": "debug", "TANDEM_LOG_SUBSYS": "tcp"})
    assert r.returncode == 0, r.stderr
    lines, matches = parsed(r.stderr)
    assert lines, "TANDEM_LOG=debug TANDEM_LOG_SUBSYS=tcp printed nothing"
    bad = [line for line, m in zip(lines, matches) if not m or m.group(4) != "tcp"]
    assert not bad, "lines that are not the tcp subsystem's:\n" + "\n".join(bad)
    ranks = {int(m.group(1)) for m in matches}
    assert ranks == {0, 1, 2, 3}, r.stderr
    nodes = {int(m.group(1)): m.group(2) for m in matches}
    assert nodes[0] == nodes[1] != nodes[2] == nodes[3], r.stderr
    levels = {m.group(3) for m in matches}
    assert "DEBUG" in levels and "INFO" in levels, r.stderr
    assert any("connected and authenticated" in m.group(5) for m in matches), r.stderr


def test_info_describes_each_ranks_setup_in_a_few_lines(cluster):
    # The engine through Python: its lines, the plugin's and the "tandem" logger's.
    script = "import tandem; tandem.init(); tandem.shutdown()"
    r = cluster.srun("-N", "2", "-n", "4", "--ntasks-per-node=2", "--horovod=on",
                     "/usr/bin/python3", "-c", script,
                     env={"TANDEM_LOG": "info", "TANDEM_SHM_CMA": "0"}, timeout=120)
    assert r.returncode == 0, r.stderr
    lines, matches = parsed(r.stderr)
    bad = [line for line, m in zip(lines, matches) if not m or m.group(3) != "INFO"]
    assert not bad, "\n".join(bad)
    for rank in range(4):
        mine = [(m.group(4), m.group(5)) for m in matches if int(m.group(1)) == rank]
        assert len(mine) <= 12, mine  # a few lines, not a flood
        text = "\n".join("%s: %s" % x for x in mine)
        assert re.search(r"^plugin: rank %d/4 node node\d local_rank \d/2" % rank, text, re.M), text
        assert re.search(r"^bootstrap: joined through PMIx .*: rank %d of 4, node \d of 2" % rank,
                         text, re.M), text
        assert re.search(r"^coll: layout: 4 ranks on 2 nodes \(2\+2\)", text, re.M), text
        assert "shm: shared memory: 2 local ranks, staged through the segment (TANDEM_SHM_CMA=0)" \
            in text, text
        assert re.search(r"^tcp: between nodes: tcp, group of 2", text, re.M), text
        assert re.search(r"^coll: allreduce across 2 nodes: .* auto: ", text, re.M), text
        assert re.search(r"^runtime: fusing allreduces up to 134217728 bytes", text, re.M), text
        assert re.search(r"^api: tandem \S+ initialized; settings that differ from their "
                         r"defaults: .*TANDEM_SHM_CMA=0 \(default 1\)", text, re.M), text
        assert re.search(r"^python: libtandem \S+: already loaded in the process", text, re.M), \
            text


def test_bad_value_stops_an_enabled_step_at_srun(cluster):
    r = cluster.srun("-N", "1", "--horovod=on", "true", env={"TANDEM_LOG": "loud"})
    assert r.returncode != 0
    assert "tandem: TANDEM_LOG='loud': expected one of error, warn, info, debug, trace; fix " \
        "or unset the variable" in r.stderr, r.stderr
    r = cluster.srun("-N", "1", "--horovod=on", "true", env={"TANDEM_LOG_SUBSYS": "tpc"})
    assert r.returncode != 0
    assert "tandem: TANDEM_LOG_SUBSYS='tpc': expected a comma-separated list of" in r.stderr, \
        r.stderr
    # A step without Tandem is none of Tandem's business.
    r = cluster.srun("-N", "1", "true", env={"TANDEM_LOG": "loud"})
    assert r.returncode == 0, r.stderr

"""The straggler report from Python (docs/runtime.md, "Stragglers"):
tandem.straggler_report() names the slow rank of 3 on every rank, its rows
come by time cost with the rank's place, and rank 0 prints the summary at
shutdown (workers/straggler.py under tandem-run)."""

import json
import re


def test_the_slow_rank_is_named_on_every_rank_and_in_the_summary(ranks):
    np, slow = 3, 2
    result = ranks.run(np, "straggler.py", slow, timeout=100,
                       env={"TANDEM_STRAGGLER_REPORT": "1"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    reports = dict((int(r), json.loads(j)) for r, j in re.findall(
        r"^(?:\[\d+\] )?straggler rank (\d+): (\{.*\})$", result.stdout, re.M))
    assert sorted(reports) == list(range(np)), out[-4000:]
    for rank, both in reports.items():
        for which in ("total", "period"):
            report = both[which]
            assert report["reports"] >= 1, (rank, which, report)
            assert (report["kind"], report["named"]) == ("rank", [slow]), (rank, which, report)
            rows = report["rows"]
            assert [row["rank"] for row in rows][0] == slow, rows
            assert sorted(row["rank"] for row in rows) == list(range(np)), rows
            assert [row["stands_out"] for row in rows] == [True] + [False] * (np - 1), rows
            for row in rows:
                assert row["host"] and row["cpus"] and row["gpu"], row
    summary = re.findall(r"INFO runtime: straggler summary \(.*\): (.*)$", result.stderr, re.M)
    assert len(summary) == 1 and summary[0].startswith("rank %d on " % slow), out[-4000:]


def test_off_there_is_no_report(ranks):
    result = ranks.run(2, "straggler.py", 1, 20, timeout=60, env={"TANDEM_STRAGGLER_REPORT": "0"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    nulls = re.findall(r"^(?:\[\d+\] )?straggler rank (\d+): null$", result.stdout, re.M)
    assert sorted(int(r) for r in nulls) == [0, 1], out[-4000:]
    assert "straggler" not in result.stderr, out[-4000:]

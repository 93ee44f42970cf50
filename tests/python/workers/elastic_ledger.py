"""Reads what workers/elastic_torch.py left in its output folder and checks
the drills' two claims (no framework needed: the tests import this).

1. Every rank that finished has the parameters of a run without faults.
2. The ElasticSampler ledger: in every epoch, every sample was drawn at
   least once by the executions of the steps that counted, and more than
   once only by the padding ElasticSampler adds when the samples left do not
   split evenly among the ranks. A step that ran, failed and was rolled back
   to the last commit counts only in its last execution: for each step, the
   latest `size` records of distinct ranks.
"""

import glob
import json
import os


def finals(out):
    """start rank -> the final.START.json record."""
    result = {}
    for path in glob.glob(os.path.join(out, "final.*.json")):
        start = int(path.rsplit(".", 2)[1])
        with open(path) as f:
            result[start] = json.load(f)
    return result


def records(out):
    """Every ledger line of every rank, as dicts, with "start" added."""
    rows = []
    for path in glob.glob(os.path.join(out, "ledger.*.jsonl")):
        start = int(path.rsplit(".", 2)[1])
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    row["start"] = start
                    rows.append(row)
    return rows


def max_difference(a, b):
    worst = 0.0
    for x, y in zip(a, b):
        assert len(x) == len(y)
        worst = max(worst, max(abs(p - q) for p, q in zip(x, y)))
    return worst


def counted_steps(rows):
    """step -> the records of its last execution."""
    by_step = {}
    for r in rows:
        if "step" in r and "indices" in r:
            by_step.setdefault(r["step"], []).append(r)
    out = {}
    for step, rs in by_step.items():
        rs.sort(key=lambda r: r["t"], reverse=True)
        size = rs[0]["size"]
        chosen, ranks = [], set()
        for r in rs:
            if r["rank"] not in ranks and r["size"] == size:
                chosen.append(r)
                ranks.add(r["rank"])
            if len(chosen) == size:
                break
        out[step] = chosen
    return out


def check_ledger(out, samples, batch):
    """Raises AssertionError when an epoch missed a sample or repeated one
    beyond the padding; returns the number of complete epochs checked."""
    steps = counted_steps(records(out))
    by_epoch = {}
    for rs in steps.values():
        for r in rs:
            by_epoch.setdefault(r["epoch"], []).append(r)
    complete = 0
    last_epoch = max(by_epoch) if by_epoch else -1
    for epoch, rs in sorted(by_epoch.items()):
        seen = {}
        for r in rs:
            for i in r["indices"]:
                seen[i] = seen.get(i, 0) + 1
        if epoch == last_epoch:
            # The last epoch may be cut short by the end of training: no
            # repeats beyond padding, nothing more.
            pass
        else:
            missing = sorted(set(range(samples)) - set(seen))
            assert not missing, "epoch %d never drew samples %s" % (epoch, missing)
            complete += 1
        # Padding: each (re)start of an epoch at size n pads to a multiple
        # of n, at most n - 1 repeats; bound by the sizes that ran it.
        sizes = sorted({r["size"] for r in rs})
        allowed = (len(sizes) + 1) * (max(sizes) - 1)
        extra = sum(c - 1 for c in seen.values())
        assert extra <= allowed, "epoch %d drew %d repeats (sizes %s, allowed %d)" % (
            epoch, extra, sizes, allowed)
    return complete


def generation_starts(out):
    """Wall times of the first step each rank completed after each reset."""
    rows = sorted(records(out), key=lambda r: r["t"])
    firsts = []
    pending = {}
    for r in rows:
        if r.get("event") == "reset":
            pending[r["start"]] = True
        elif "indices" in r and pending.pop(r["start"], False):
            firsts.append((r["t"], r["start"], r["size"]))
    return firsts



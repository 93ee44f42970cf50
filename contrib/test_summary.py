#!/usr/bin/python3
"""Adds up the results of every test stage into one closing line.

Reads meson's testlog.json (one JSON object per test), pytest's JUnit XML
files and the logs of the check scripts (contrib/package/: one "  ok: ..."
line per passed check, "NAME: FAILED: ..." for the failed one), and prints
'N passed, N failed, N skipped'. Exits non-zero when a stage ran no test at
all, so that a broken stage can never look green.
"""
import json
import sys
import xml.etree.ElementTree as ET


def meson_counts(path):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            result = json.loads(line)["result"]
            if result in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif result == "SKIP":
                counts["skipped"] += 1
            else:
                counts["failed"] += 1
    return counts


def junit_counts(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for s in suites:
        total = int(s.get("tests", 0))
        failed = int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped = int(s.get("skipped", 0))
        counts["failed"] += failed
        counts["skipped"] += skipped
        counts["passed"] += total - failed - skipped
    return counts


def checks_counts(path):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("  ok: "):
                counts["passed"] += 1
            elif ": FAILED: " in line:
                counts["failed"] += 1
    return counts


COUNTERS = {"meson": meson_counts, "junit": junit_counts, "checks": checks_counts}


def main(argv):
    total = {"passed": 0, "failed": 0, "skipped": 0}
    empty = []
    for arg in argv[1:]:
        kind, path = arg.split(":", 1)
        try:
            c = COUNTERS[kind](path)
        except (OSError, ValueError, ET.ParseError) as e:
            print(f"test-summary: could not read {kind} results {path}: {e}")
            c = {"passed": 0, "failed": 1, "skipped": 0}
        if sum(c.values()) == 0:
            empty.append(path)
        print(f"  {path}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped")
        for k in total:
            total[k] += c[k]
    for path in empty:
        print(f"test-summary: {path} ran no test")
    print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 1 if total["failed"] or empty else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

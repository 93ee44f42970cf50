"""Each test's outcome from one whole-file job of contrib/horovod-suite.sh -1:
`tandem-run --label` output of `pytest -rA` on every rank.

    tally.py LOG TEST_FILE NP HUNG [REGEX]

HUNG: 1 when the job hit its deadline; REGEX: only the tests whose name
matches (the job ran those only).

Per rank, a test failed when pytest reports it FAILED, ERROR or SUBFAILED
(a failed subtest: TensorFlow's TestCase runs each test in graph mode and
in eager mode as two subtests), and skipped when every subtest skipped
(SKIPPED, or SUBSKIPPED, which pytest prints instead when given node ids):
-rA names a skip only by where it was raised, so the skips located in the
test's body are counted ([N] each), and two of them (both modes) or a
SKIPPED without a PASSED (a test without subtests) is a skip. A PASSED test
with one mode skipped passed (the per-test mode's "1 passed, 1 skipped, 1
subtests passed"). tf.test.TestCase's own test_session is not counted. Over the ranks as the
per-test mode counts them: FAIL if any rank failed, PASS if some passed and
the rest passed or skipped, SKIP if all skipped; a test some rank never
reported is HANG when the job hit its deadline, else FAIL. Prints one line
per test in file order, then the counts (passed failed hung skipped).
"""

import ast
import re
import sys

LINE = re.compile(r"^\[(\d+)\] (PASSED|FAILED|ERROR|SUBFAILED\S*|SUBSKIPPED\S*|SKIPPED) (.*)$")
SKIP = re.compile(r"^\[(\d+)\] (\S+?):(\d+): (.*)$")
TEST = re.compile(r"::(test\w*)")
MODES = 2  # subtests per test: TensorFlow's TestCase runs graph mode and eager mode


def tests_of(path):
    """[(first line, last line, name)] of every test method, in file order."""
    found = []
    for node in ast.parse(open(path).read()).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    # A decorator's skip (@unittest.skip) is reported at the
                    # decorator's line, above the def.
                    first = min([item.lineno] + [d.lineno for d in item.decorator_list])
                    found.append((first, item.end_lineno, item.name))
    return found


def known_name(name, names):
    """The test method a reported name belongs to: parameterized.expand runs
    test_x as test_x_0, test_x_1, ... (any of them failing fails test_x)."""
    if name in names:
        return name
    owners = [n for n in names if name.startswith(n + "_")]
    return max(owners, key=len) if owners else name


def per_rank(log, test_file, tests):
    """{(name, rank): 'pass' | 'fail' | 'skip'} for what the log reports."""
    base = test_file.rsplit("/", 1)[-1]
    names = {name for _, _, name in tests}
    reported, skips = {}, {}
    for raw in open(log, errors="replace"):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        rank, kind, rest = int(m.group(1)), m.group(2), m.group(3)
        if kind == "SKIPPED" or kind.startswith("SUBSKIPPED"):
            s = SKIP.match(rest)
            if s and s.group(2).endswith(base):
                line = int(s.group(3))
                for first, last, name in tests:
                    if first <= line <= last:
                        skips[(name, rank)] = skips.get((name, rank), 0) + int(s.group(1))
            continue
        t = TEST.search(rest)
        if t:
            key = (known_name(t.group(1), names), rank)
            if kind != "PASSED" or reported.get(key) != "fail":
                reported[key] = "pass" if kind == "PASSED" else "fail"
    outcome = dict(reported)
    for key, n in skips.items():
        if reported.get(key) is None or (reported[key] == "pass" and n >= MODES):
            outcome[key] = "skip"
    return outcome


def main():
    log, test_file, np_, hung_job = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    tests = tests_of(test_file)
    if len(sys.argv) > 5 and sys.argv[5]:
        tests = [t for t in tests if re.search(sys.argv[5], t[2])]
    seen = per_rank(log, test_file, tests)
    counts = {"PASS": 0, "FAIL": 0, "HANG": 0, "SKIP": 0}
    for _, _, name in tests:
        got = [seen.get((name, r)) for r in range(np_)]
        if "fail" in got:
            outcome = "FAIL"
        elif None in got:
            outcome = "HANG" if hung_job else "FAIL"
        elif all(g == "skip" for g in got):
            outcome = "SKIP"
        else:
            outcome = "PASS"
        counts[outcome] += 1
        print("%-4s %s" % (outcome, name))
    print("%d %d %d %d" % (counts["PASS"], counts["FAIL"], counts["HANG"], counts["SKIP"]))


if __name__ == "__main__":
    main()

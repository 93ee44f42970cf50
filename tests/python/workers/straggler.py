"""A job with one slow rank, judged by the straggler report through the
tandem package (tandem.straggler_report). Run under tandem-run by
tests/python/test_core_straggler.py with TANDEM_STRAGGLER_REPORT set.

    straggler.py SLOW_RANK [STEPS]

The ranks step until the first report ran (agreed through the steps' own
allgather), or STEPS steps, then each prints "straggler rank R: " and the
report as JSON (null: no report ran).
"""

import json
import sys
import time

import tandem
from tandem import _collectives


def main():
    slow = int(sys.argv[1])
    tandem.init()
    if tandem.rank() == slow:
        print("straggler rank %d sleeps" % slow, flush=True)
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    for _ in range(steps):
        if tandem.rank() == slow:
            time.sleep(0.02)
        report = tandem.straggler_report()
        seen = _collectives.allgather_int64([report["reports"] if report else 0],
                                            name="straggler.step")
        if max(v for row in seen for v in row) >= 1:
            break
    total = tandem.straggler_report()
    both = {"total": total, "period": tandem.straggler_report(period=True)} if total else None
    print("straggler rank %d: %s" % (tandem.rank(), json.dumps(both)), flush=True)
    tandem.shutdown()


if __name__ == "__main__":
    main()

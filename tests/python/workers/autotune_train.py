"""Runs a training script, then writes this rank's autotune record:

    python autotune_train.py OUT SCRIPT [ARGS...]

writes OUT.rank<R>.json, tandem.autotune_state() once the script ends, so
that the test can compare what every rank applied and after which cycle.
"""

import json
import runpy
import sys

out = sys.argv[1]
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")

import tandem  # noqa: E402 (the script initialised it)

with open("%s.rank%d.json" % (out, tandem.rank()), "w") as f:
    json.dump(tandem.autotune_state(), f)

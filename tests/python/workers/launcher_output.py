"""Reading identity_allreduce.py's objects out of a launcher's output.

Open MPI forwards each rank's output in chunks, so two ranks' lines can meet
on one line of what mpirun prints; the objects are flat, so they are found
wherever they are rather than one per line."""

import json
import re

FLAT_OBJECT = re.compile(r"\{[^{}]*\}")


def rank_objects(text):
    """Every flat JSON object in `text`, in the order of their "rank"."""
    return sorted((json.loads(x) for x in FLAT_OBJECT.findall(text)), key=lambda d: d["rank"])

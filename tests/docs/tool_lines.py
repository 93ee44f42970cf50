"""Runs one of contrib/bench's table tools and compares its output lines
with what a test expects; check_ratio_rows.py and check_compare_table.py
share it."""
import subprocess
import sys


def differs(tool, args, want, skip=0):
    """None when `tool args` exits 0 and prints `want` (after its first
    `skip` lines), else a message naming the arguments, what was expected
    and what came."""
    name = tool.rsplit("/", 1)[-1]
    run = subprocess.run([sys.executable, tool, *args], capture_output=True, text=True)
    if run.returncode != 0:
        return "%s %s failed (%d): %s" % (name, " ".join(args), run.returncode, run.stderr)
    got = run.stdout.strip("\n").splitlines()[skip:]
    if got == want:
        return None
    return "%s %s: expected\n%s\ngot\n%s" % (name, " ".join(args), "\n".join(want), "\n".join(got))

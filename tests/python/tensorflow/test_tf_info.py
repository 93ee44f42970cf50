"""tandem-info, run by an interpreter that has TensorFlow, says so (and
tandem.tensorflow loads there: nothing to compile)."""

import re
import subprocess
import sys

import tensorflow as tf


def test_tandem_info_reports_tensorflow(build_dir, py_env):
    r = subprocess.run([sys.executable, str(build_dir / "tools" / "tandem-info")],
                       capture_output=True, text=True, timeout=300, env=py_env)
    assert r.returncode == 0, r.stderr[-3000:]
    line = re.search(r"^\s*\[X\] TensorFlow (\S+) \((.*)\)$", r.stdout, re.M)
    assert line, r.stdout
    assert line.group(1) == tf.__version__ and line.group(2) == sys.executable, line.group(0)

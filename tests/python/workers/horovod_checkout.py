"""Where the tests read Horovod's own files from: the clone (bare or not) of
horovod/horovod named by TANDEM_HOROVOD_CHECKOUT, at a tag, at test time.
Nothing of Horovod is copied into the tree; without a checkout the tests
that need one skip, saying which variable to set."""

import os
import pathlib
import subprocess

import pytest

TAG = "v0.28.1"


def checkout():
    """The checkout's path, or a skip naming the variable."""
    path = os.environ.get("TANDEM_HOROVOD_CHECKOUT", "")
    if not path:
        pytest.skip("TANDEM_HOROVOD_CHECKOUT is not set (a clone of horovod/horovod with the "
                    f"tag {TAG}; the tests read Horovod's files from it, never copied)")
    if not pathlib.Path(path).exists():
        pytest.skip(f"no Horovod checkout at TANDEM_HOROVOD_CHECKOUT={path}")
    return path


def show(path):
    """The text of PATH in the checkout at TAG."""
    return subprocess.run(["git", "-C", checkout(), "show", f"{TAG}:{path}"],
                          capture_output=True, text=True, check=True).stdout

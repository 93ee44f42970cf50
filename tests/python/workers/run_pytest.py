"""Runs pytest on one test file in this rank (tandem-run starts one per
rank, as Horovod's CI runs its test files under horovodrun)."""

import sys

import pytest

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", sys.argv[1]]))

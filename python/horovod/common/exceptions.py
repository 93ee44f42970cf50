"""Horovod's exception names, bound to Tandem's errors."""

from tandem.errors import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401

# HorovodInternalError is what a failed collective raises (ranks disagree, a
# peer is lost or stops answering, the engine was shut down or aborted): a
# TandemError and a RuntimeError, as in Horovod. Errors Horovod reports as
# ValueError (a duplicate in-flight name, a bad argument) are TandemError and
# ValueError instead; see tandem/errors.py. HostsUpdatedInterrupt is what an
# elastic job's state.commit() raises when processes asked to join
# (docs/elastic.md).

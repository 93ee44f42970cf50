"""Horovod's exception names, bound to Tandem's errors."""

from tandem.errors import HorovodInternalError  # noqa: F401

# HorovodInternalError is what a failed collective raises (ranks disagree, a
# peer is lost or stops answering, the engine was shut down or aborted): a
# TandemError and a RuntimeError, as in Horovod. Errors Horovod reports as
# ValueError (a duplicate in-flight name, a bad argument) are TandemError and
# ValueError instead; see tandem/errors.py.


class HostsUpdatedInterrupt(RuntimeError):
    """Elastic Horovod's signal that the hosts changed; Tandem has no elastic
    mode and never raises it (kept so that scripts naming it import)."""

    def __init__(self, skip_sync):
        super().__init__(skip_sync)
        self.skip_sync = skip_sync

"""Horovod's exception names, bound to Tandem's errors."""

from tandem.errors import TandemError

# Horovod raises HorovodInternalError when a collective fails; Tandem's
# errors are all TandemError, so scripts catching the Horovod name still work.
HorovodInternalError = TandemError


class HostsUpdatedInterrupt(RuntimeError):
    """Elastic Horovod's signal; Tandem has no elastic mode and never raises it."""

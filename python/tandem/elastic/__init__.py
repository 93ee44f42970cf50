"""Horovod's elastic API on the framework-neutral core (``horovod.common.elastic``).

A script wraps its training loop in ``@hvd.elastic.run``, keeps what it must
not lose (model, optimizer, counters) in a :class:`State`, and commits it
every few batches. When a collective fails (a rank died or stopped
answering) the run restores the last commit, leaves the job and joins its
next generation, which the membership service forms from the ranks that are
alive (``srun --horovod=elastic``, docs/elastic.md); the state is broadcast
from the new rank 0 and the reset callbacks run. When processes ask to join
(a later ``srun --overlap --horovod=elastic`` step), the service notifies the
ranks, and the next ``state.commit()`` raises :class:`HostsUpdatedInterrupt`
on every rank at once, which the run turns into the same reset.

The framework frontends (tandem.torch.elastic, tandem.tensorflow.elastic,
tandem.keras.elastic) add their State classes and pass their own
init/shutdown to :func:`run_fn`; everything else lives here once.
"""

from tandem.elastic.notifications import (
    HostUpdateResult, WorkerNotificationManager, notification_manager,
)
from tandem.elastic.run import run_fn
from tandem.elastic.state import ObjectState, State
from tandem.errors import HorovodInternalError, HostsUpdatedInterrupt

__all__ = ["State", "ObjectState", "run_fn", "notification_manager", "HostUpdateResult",
           "WorkerNotificationManager", "HostsUpdatedInterrupt", "HorovodInternalError"]

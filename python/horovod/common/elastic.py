"""``horovod.common.elastic`` on Tandem: the framework-neutral elastic API
(State, ObjectState, run_fn, notification_manager), from tandem.elastic."""

from tandem.elastic import (  # noqa: F401
    HorovodInternalError, HostUpdateResult, HostsUpdatedInterrupt, ObjectState, State,
    WorkerNotificationManager, notification_manager, run_fn,
)

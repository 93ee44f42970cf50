"""``horovod.torch.elastic`` on Tandem: run, TorchState, ElasticSampler
(docs/elastic.md). The run loop and the State base classes are
framework-neutral (tandem.elastic); this module adds torch's state handlers
and sampler, and torch's init/shutdown as the reset."""

from tandem import _basics
from tandem.elastic import run_fn
from tandem.torch.elastic.sampler import ElasticSampler
from tandem.torch.elastic.state import TorchState


def run(func):
    """Decorator used to run the elastic training process.

    ``func(state, ...)`` runs on every worker; when a worker is lost or new
    ones join, every worker restores (or keeps) its state, moves to the
    job's next generation and runs ``func`` again from the synchronized
    state. Collective operations must not be the call to the wrapped
    function: new workers could run them during their initialization while
    the others sync state."""
    return run_fn(func, _reset)


def _reset():
    _basics.shutdown()
    _basics.init()


__all__ = ["TorchState", "ElasticSampler", "run"]

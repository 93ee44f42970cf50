"""``horovod.torch.elastic.state`` on Tandem."""

from tandem.torch.elastic.state import *  # noqa: F403
from tandem.torch.elastic.state import (  # noqa: F401
    ModelStateHandler, OptimizerStateHandler, SamplerStateHandler, StateHandler, TorchState,
    get_handler_registry, set_handler_registry,
)

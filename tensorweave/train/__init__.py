"""tf.train namespace: each module lists its public names in `__all__`."""
from __future__ import annotations

from tensorweave.train.optimizer import *  # noqa: F401,F403
from tensorweave.train.training_util import *  # noqa: F401,F403
from tensorweave.train.learning_rate_decay import *  # noqa: F401,F403
from tensorweave.train.moving_averages import *  # noqa: F401,F403
from tensorweave.train.optimizers import *  # noqa: F401,F403
from tensorweave.train.device_setter import *  # noqa: F401,F403
from tensorweave.train.coordinator import *  # noqa: F401,F403
from tensorweave.train.queue_runner import *  # noqa: F401,F403
from tensorweave.train.input import *  # noqa: F401,F403
from tensorweave.train.session_run_hook import *  # noqa: F401,F403
from tensorweave.train.basic_session_run_hooks import *  # noqa: F401,F403
from tensorweave.train.scaffold import *  # noqa: F401,F403
from tensorweave.train.session_manager import *  # noqa: F401,F403
from tensorweave.train.monitored_session import *  # noqa: F401,F403
from tensorweave.train.sync_replicas_optimizer import *  # noqa: F401,F403
from tensorweave.train.supervisor import *  # noqa: F401,F403
from tensorweave.train.graph_io import *  # noqa: F401,F403
from tensorweave.distributed.cluster import *  # noqa: F401,F403
from tensorweave.distributed.server import *  # noqa: F401,F403
from tensorweave.train.checkpoint_management import *  # noqa: F401,F403
from tensorweave.train.checkpoint_utils import *  # noqa: F401,F403
from tensorweave.train.saver import *  # noqa: F401,F403
from tensorweave.summary.writer import summary_iterator  # noqa: F401
from tensorweave.ops.io.example_proto import *  # noqa: F401,F403
from tensorweave.ops.io.file_ops import match_filenames_once  # noqa: F401

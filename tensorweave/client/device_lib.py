"""tensorflow.python.client.device_lib: the devices of this process."""
from __future__ import annotations

import random

from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import DeviceAttributes

CPU_MEMORY_LIMIT = 268435456          # what TF reports for a CPU device: a nominal 256 MiB
_INCARNATION = random.SystemRandom().getrandbits(64) or 1   # this process's, as TF draws one per device


@tf_export("python.client.device_lib.list_local_devices")
def list_local_devices(session_config=None) -> list:
    """TF1's device_lib.list_local_devices(): a DeviceAttributes protocol buffer (name,
    device_type, memory_limit, incarnation) for each device this process runs kernels on."""
    return [DeviceAttributes(name="/device:CPU:0", device_type="CPU", memory_limit=CPU_MEMORY_LIMIT,
                             incarnation=_INCARNATION)]

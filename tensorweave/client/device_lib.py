"""tensorflow.python.client.device_lib: the devices of this process."""
from __future__ import annotations

import random

from tensorweave.framework.tf_export import tf_export
from tensorweave.framework.tf_protos import DeviceAttributes
from tensorweave.runtime.devices import visible_gpus

CPU_MEMORY_LIMIT = 268435456          # what TF reports for a CPU device: a nominal 256 MiB
_INCARNATION = random.SystemRandom().getrandbits(64) or 1   # this process's, as TF draws one per device


@tf_export("python.client.device_lib.list_local_devices")
def list_local_devices(session_config=None) -> list:
    """TF1's device_lib.list_local_devices(session_config=None): a DeviceAttributes protocol buffer
    (name, device_type, memory_limit, incarnation, physical_device_desc) for each device this
    process runs kernels on: its CPU, then the GPUs `session_config` makes visible, each with the
    bytes its memory pool may hold (as in TF, listing them sets up the GPUs' memory pools, bounded
    by this ConfigProto's gpu_options when it is the first to)."""
    cpu = DeviceAttributes(name="/device:CPU:0", device_type="CPU", memory_limit=CPU_MEMORY_LIMIT,
                           incarnation=_INCARNATION)
    return [cpu] + [DeviceAttributes(name=f"/device:{gpu.name}", device_type="GPU", memory_limit=gpu.memory_limit,
                                     incarnation=(_INCARNATION + 1 + gpu.index) % (1 << 64) or 1,
                                     physical_device_desc=gpu.description())
                    for gpu in visible_gpus(session_config)]

"""Reading a checkpoint of either format: ours (bundle.py) or TensorFlow's V2 (tf_bundle.py),
told apart by the index file. `CheckpointReader` is what tf.train.NewCheckpointReader returns
and what the RestoreV2 kernel reads through."""
from __future__ import annotations

import os

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.checkpoint.bundle import Bundle, is_our_index
from tensorweave.ops.checkpoint.slices import assemble, parse_shape_and_slice
from tensorweave.ops.checkpoint.tf_bundle import TFBundle, is_tf_index

# The two formats by their names in TENSORWEAVE_CHECKPOINT_FORMAT (io_ops.py).
SAFETENSORS, TENSORFLOW = "safetensors", "tensorflow"


def checkpoint_index_exists(prefix: str) -> bool:
    return os.path.isfile(prefix + ".index")


def checkpoint_format(prefix: str, what: str) -> str:
    """The format of checkpoint `prefix`, told by its index file (ours is JSON, TF's ends with the
    table's magic number): SAFETENSORS or TENSORFLOW. `what` begins the errors' messages."""
    index = prefix + ".index"
    if not os.path.isfile(index):
        raise errors.NotFoundError(None, None, f"{what}: Failed to find any matching files for {prefix} (no {index})")
    if is_our_index(index):
        return SAFETENSORS
    if is_tf_index(index):
        return TENSORFLOW
    raise errors.DataLossError(None, None, f"{index} is neither a tensorweave nor a TensorFlow checkpoint index "
                               "(truncated or corrupted)")


class CheckpointReader:
    """A checkpoint `prefix` opened for reading (TF's CheckpointReader)."""

    def __init__(self, prefix: str):
        if isinstance(prefix, bytes):
            prefix = prefix.decode()
        bundle = {SAFETENSORS: Bundle, TENSORFLOW: TFBundle}[
            checkpoint_format(prefix, "Unsuccessful TensorSliceReader constructor")]
        self._bundle = bundle(prefix)
        self._prefix = prefix

    def _entry(self, name: str):
        if isinstance(name, bytes):
            name = name.decode()
        entry = self._bundle.entries.get(name)
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint {self._prefix}")
        return name, entry

    def has_tensor(self, tensor_str) -> bool:
        name = tensor_str.decode() if isinstance(tensor_str, bytes) else tensor_str
        return name in self._bundle.entries

    def get_tensor(self, tensor_str) -> np.ndarray:
        """The whole saved tensor `tensor_str` (assembled from its slices if it was partitioned)."""
        name, entry = self._entry(tensor_str)
        return assemble(entry, name, (0,) * len(entry.shape), entry.shape, self._bundle.load, self._prefix)

    def read(self, name, shape_and_slice="") -> np.ndarray:
        """The tensor, or the slice of it that TF's `shape_and_slice` string names."""
        name, entry = self._entry(name)
        parsed = parse_shape_and_slice(shape_and_slice, f"restoring {name}")
        if parsed is None:
            return self.get_tensor(name)
        full, start, length = parsed
        if tuple(full) != tuple(entry.shape):
            raise errors.InvalidArgumentError(
                None, None, f"Shape in shape_and_slice spec {list(full)} does not match the shape stored in "
                f"checkpoint: {list(entry.shape)} (tensor {name} in {self._prefix})")
        return assemble(entry, name, start, length, self._bundle.load, self._prefix)

    def dtype_name(self, name) -> str:
        return self._entry(name)[1].dtype

    def get_variable_to_shape_map(self) -> dict:
        return {n: list(e.shape) for n, e in self._bundle.entries.items()}

    def get_variable_to_dtype_map(self) -> dict:
        return {n: dtypes.as_dtype(e.dtype) for n, e in self._bundle.entries.items()}

    def debug_string(self) -> bytes:
        lines = [f"{n} ({e.dtype}) {list(e.shape)}" for n, e in sorted(self._bundle.entries.items())]
        return ("\n".join(lines) + "\n").encode()


@tf_export("train.NewCheckpointReader")
def NewCheckpointReader(filepattern) -> CheckpointReader:
    """tf.train.NewCheckpointReader(filepattern): a reader of checkpoint prefix `filepattern`
    (ours or TensorFlow's V2): get_tensor, has_tensor, get_variable_to_shape_map,
    get_variable_to_dtype_map, debug_string."""
    return CheckpointReader(filepattern)

"""The `checkpoint` state file and finding checkpoints: tf.train.latest_checkpoint,
get_checkpoint_state, update_checkpoint_state, generate_checkpoint_state_proto,
checkpoint_exists, get_checkpoint_mtimes, remove_checkpoint.

The state file is TF's text format of CheckpointState
(`model_checkpoint_path: "model.ckpt-4"` and one `all_model_checkpoint_paths: "..."` per kept
checkpoint, oldest first), written under a temporary name and renamed.
"""
from __future__ import annotations

import glob
import logging
import os
import re
from typing import Optional

from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.checkpoint.bundle import write_text_atomically


_log = logging.getLogger("tensorweave")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), s)


@tf_export("train.CheckpointState")
class CheckpointState:
    """TF's CheckpointState: the latest checkpoint path, every kept path (oldest first), their
    save times and the last preserved (keep-every-n-hours) time."""

    def __init__(self, model_checkpoint_path: str = "", all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp: float = 0.0):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        lines = [f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}"]
        lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str) -> "CheckpointState":
        """Parses the text format; ValueError naming the line when malformed."""
        state = cls()
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if not sep:
                raise ValueError(f"line {n}: expected 'field: value', got {line!r}")
            if key in ("model_checkpoint_path", "all_model_checkpoint_paths"):
                m = _STRING.fullmatch(value)
                if m is None:
                    raise ValueError(f"line {n}: {key} needs a quoted string, got {value!r}")
                if key == "model_checkpoint_path":
                    state.model_checkpoint_path = _unquote(m.group(1))
                else:
                    state.all_model_checkpoint_paths.append(_unquote(m.group(1)))
            elif key in ("all_model_checkpoint_timestamps", "last_preserved_timestamp"):
                try:
                    t = float(value)
                except ValueError:
                    raise ValueError(f"line {n}: {key} needs a number, got {value!r}") from None
                if key == "last_preserved_timestamp":
                    state.last_preserved_timestamp = t
                else:
                    state.all_model_checkpoint_timestamps.append(t)
            else:
                raise ValueError(f"line {n}: unknown field {key!r}")
        return state

    def __eq__(self, other):
        return isinstance(other, CheckpointState) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return self.to_text()

    __str__ = __repr__


def _state_path(save_dir: str, latest_filename: Optional[str]) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


@tf_export("train.generate_checkpoint_state_proto")
def generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                                    all_model_checkpoint_timestamps=None,
                                    last_preserved_timestamp=None) -> CheckpointState:
    """tf.train.generate_checkpoint_state_proto(save_dir, model_checkpoint_path,
    all_model_checkpoint_paths=None, ...): a CheckpointState whose path list ends with
    model_checkpoint_path; paths are made relative to save_dir when save_dir is relative."""
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    timestamps = list(all_model_checkpoint_timestamps or [])
    if timestamps and len(timestamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths ({len(paths)} "
                         f"vs {len(timestamps)})")
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(model_checkpoint_path, paths, timestamps, last_preserved_timestamp or 0.0)


@tf_export("train.update_checkpoint_state")
def update_checkpoint_state(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                            latest_filename=None, all_model_checkpoint_timestamps=None,
                            last_preserved_timestamp=None) -> None:
    """tf.train.update_checkpoint_state(save_dir, model_checkpoint_path,
    all_model_checkpoint_paths=None, latest_filename=None, ...): writes the state file
    `save_dir/checkpoint` (atomically)."""
    update_checkpoint_state_internal(save_dir, model_checkpoint_path, all_model_checkpoint_paths, latest_filename,
                                     save_relative_paths=False,
                                     all_model_checkpoint_timestamps=all_model_checkpoint_timestamps,
                                     last_preserved_timestamp=last_preserved_timestamp)


def update_checkpoint_state_internal(save_dir, model_checkpoint_path, all_model_checkpoint_paths=None,
                                     latest_filename=None, save_relative_paths=False,
                                     all_model_checkpoint_timestamps=None, last_preserved_timestamp=None) -> None:
    path = _state_path(save_dir, latest_filename)
    if save_relative_paths:
        rel = lambda p: os.path.relpath(p, save_dir) if os.path.isabs(p) else p  # noqa: E731
        model_checkpoint_path = rel(model_checkpoint_path)
        all_model_checkpoint_paths = [rel(p) for p in all_model_checkpoint_paths or []]
    state = generate_checkpoint_state_proto(save_dir, model_checkpoint_path, all_model_checkpoint_paths,
                                            all_model_checkpoint_timestamps, last_preserved_timestamp)
    if path == os.path.abspath(state.model_checkpoint_path) or path == state.model_checkpoint_path:
        raise RuntimeError(f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
                           "Please use a different save path.")
    write_text_atomically(path, state.to_text())


@tf_export("train.get_checkpoint_state")
def get_checkpoint_state(checkpoint_dir, latest_filename=None) -> Optional[CheckpointState]:
    """tf.train.get_checkpoint_state(checkpoint_dir, latest_filename=None): the CheckpointState
    in `checkpoint_dir/checkpoint` with relative paths made relative to checkpoint_dir, or None
    when there is none (or it cannot be parsed, which is logged)."""
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _log.warning("%s: %s: Checkpoint ignored", path, e)
        return None
    try:
        state = CheckpointState.from_text(text)
    except ValueError as e:
        _log.warning("%s: %s: Checkpoint ignored", path, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir}")
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


@tf_export("train.checkpoint_exists")
def checkpoint_exists(checkpoint_prefix) -> bool:
    """tf.train.checkpoint_exists(checkpoint_prefix): a V2 checkpoint (prefix.index) or V1
    files matching the pattern exist."""
    if isinstance(checkpoint_prefix, bytes):
        checkpoint_prefix = checkpoint_prefix.decode()
    if os.path.isfile(checkpoint_prefix + ".index"):
        return True
    return bool(glob.glob(checkpoint_prefix))


@tf_export("train.latest_checkpoint")
def latest_checkpoint(checkpoint_dir, latest_filename=None) -> Optional[str]:
    """tf.train.latest_checkpoint(checkpoint_dir, latest_filename=None): the prefix of the newest
    checkpoint the state file names, if its files exist; else None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


@tf_export("train.get_checkpoint_mtimes")
def get_checkpoint_mtimes(checkpoint_prefixes) -> list:
    """tf.train.get_checkpoint_mtimes(checkpoint_prefixes): each existing checkpoint's index
    modification time."""
    out = []
    for prefix in checkpoint_prefixes:
        for path in (prefix + ".index", prefix):
            if os.path.isfile(path):
                out.append(os.path.getmtime(path))
                break
    return out


@tf_export("train.remove_checkpoint")
def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta") -> None:
    """tf.train.remove_checkpoint(checkpoint_prefix, checkpoint_format_version=V2,
    meta_graph_suffix='meta'): deletes the checkpoint's index, data files and meta graph (the
    index first, so a half-deleted checkpoint is never taken for a whole one)."""
    for path in [checkpoint_prefix + ".index"] + sorted(glob.glob(glob.escape(checkpoint_prefix) + ".data-*")) + \
            [meta_graph_filename(checkpoint_prefix, meta_graph_suffix)]:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def meta_graph_filename(checkpoint_filename: str, meta_graph_suffix: str = "meta") -> str:
    """'model.ckpt-4' -> 'model.ckpt-4.meta' (a sharded pattern's shard suffix dropped)."""
    basename = re.sub(r"-[\d\?]+-of-\d+$", "", checkpoint_filename)
    return f"{basename}.{meta_graph_suffix}"

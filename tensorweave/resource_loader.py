"""tf.resource_loader: the files that ship beside a script (Bazel's data dependencies, or a plain
directory), found from the calling script's location."""
from __future__ import annotations

import os
import sys

from tensorweave.framework.tf_export import tf_export


def _caller_dir(depth: int = 2) -> str:
    """The directory of the source file `depth` frames up (1: the caller of the function calling this)."""
    return os.path.dirname(os.path.abspath(sys._getframe(depth).f_code.co_filename))


@tf_export("resource_loader.get_data_files_path")
def get_data_files_path() -> str:
    """tf.resource_loader.get_data_files_path(): the directory of the calling script, where its
    data files lie."""
    return _caller_dir()


@tf_export("resource_loader.get_path_to_datafile")
def get_path_to_datafile(path) -> str:
    """tf.resource_loader.get_path_to_datafile(path): `path` joined to the calling script's
    directory."""
    return os.path.join(_caller_dir(), path)


@tf_export("resource_loader.load_resource")
def load_resource(path) -> bytes:
    """tf.resource_loader.load_resource(path): the bytes of the file at `path`, relative to the
    calling script's directory; IOError (OSError) when it cannot be read."""
    with open(os.path.join(_caller_dir(), path), "rb") as f:
        return f.read()


@tf_export("resource_loader.get_root_dir_with_all_resources")
def get_root_dir_with_all_resources() -> str:
    """tf.resource_loader.get_root_dir_with_all_resources(): the directory just under a Bazel
    `.runfiles` directory that holds the calling script (the root its data paths are relative
    to); the script's own directory when it is not under one."""
    script_dir = _caller_dir()
    below, current = None, script_dir
    while True:
        if ".runfiles" in os.path.basename(current):
            return below or script_dir
        parent = os.path.dirname(current)
        if parent == current:
            return script_dir
        below, current = current, parent


@tf_export("resource_loader.readahead_file_path")
def readahead_file_path(path, readahead="128M") -> str:
    """tf.resource_loader.readahead_file_path(path, readahead='128M'): `path` unchanged, as TF1
    (readahead is a no-op for local files)."""
    return path

"""tf.gfile: TF1's file functions on local paths (ops/io/gfile.py)."""
from __future__ import annotations

from tensorweave.ops.io.gfile import (  # noqa: F401
    Copy,
    DeleteRecursively,
    Exists,
    FastGFile,
    GFile,
    Glob,
    IsDirectory,
    ListDirectory,
    MakeDirs,
    MkDir,
    Open,
    Remove,
    Rename,
    Stat,
    Walk,
)

"""tf.io.gfile: the lower-case spellings of tf.gfile's functions."""
from __future__ import annotations

from tensorweave.ops.io.gfile import (  # noqa: F401
    Copy as copy, DeleteRecursively as rmtree, Exists as exists, GFile, Glob as glob, IsDirectory as isdir,
    ListDirectory as listdir, MakeDirs as makedirs, MkDir as mkdir, Remove as remove, Rename as rename,
    Stat as stat, Walk as walk)

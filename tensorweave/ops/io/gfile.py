"""tf.gfile / tf.io.gfile on local paths, with TF's error classes (a missing file is
NotFoundError naming it). Reader, file and dataset kernels open files through `open_file` and
`os_error`, so every path in the input pipeline fails the same way."""
from __future__ import annotations

import glob as _glob
import os
import posixpath
import shutil
from dataclasses import dataclass
from typing import Iterator, Optional

from tensorweave.framework import errors
from tensorweave.framework.errors import os_error
from tensorweave.framework.tf_export import tf_export


def as_path(name) -> str:
    """A file name given as str, bytes or os.PathLike, without a file:// scheme."""
    if isinstance(name, (bytes, bytearray)):
        name = bytes(name).decode("utf-8")
    name = os.fspath(name)
    if not isinstance(name, str):
        raise TypeError(f"A file name must be a string, got {type(name).__name__}")
    return name[len("file://"):] if name.startswith("file://") else name


def open_file(path, mode: str = "rb", node=None, op=None):
    """A local file object; failures are TF errors naming the file."""
    path = as_path(path)
    try:
        return open(path, mode)
    except OSError as e:
        raise os_error(e, path, node, op) from None


@tf_export("gfile.FastGFile", "gfile.GFile", "gfile.Open", "io.gfile.GFile")
class GFile:
    """tf.gfile.GFile(name, mode='r'): a file object; text modes read and write str, binary
    modes ('rb', 'wb', 'ab') bytes."""

    def __init__(self, name, mode: str = "r"):
        self._name = as_path(name)
        if mode not in ("r", "w", "a", "rb", "wb", "ab", "r+", "w+", "a+", "rb+", "wb+", "ab+"):
            raise errors.InvalidArgumentError(None, None, f"mode is not 'r' or 'w' or 'a' or with 'b': {mode}")
        self._mode = mode
        self._f = None

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    def _file(self):
        if self._f is None:
            binary = "b" in self._mode
            self._f = open_file(self._name, self._mode if binary else self._mode.replace("b", ""))
            if not binary and "r" in self._mode:
                self._f.reconfigure(newline="")   # TF returns lines with their own endings
        return self._f

    def _call(self, method: str, *args):
        try:
            return getattr(self._file(), method)(*args)
        except OSError as e:
            raise os_error(e, self._name) from None

    def size(self) -> int:
        return Stat(self._name).length

    def read(self, n: int = -1):
        return self._call("read", -1 if n is None else n)

    def readline(self):
        return self._call("readline")

    def readlines(self) -> list:
        return self._call("readlines")

    def write(self, file_content) -> None:
        if "b" not in self._mode and isinstance(file_content, bytes):
            file_content = file_content.decode("utf-8")
        if "b" in self._mode and isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._call("write", file_content)

    def seek(self, offset: Optional[int] = None, whence: int = 0, position: Optional[int] = None) -> int:
        if position is not None:
            offset = position
        return self._call("seek", offset or 0, whence)

    def tell(self) -> int:
        return self._call("tell")

    def flush(self) -> None:
        if self._f is not None:
            self._call("flush")

    def close(self) -> None:
        if self._f is not None:
            f, self._f = self._f, None
            try:
                f.close()   # writes what is buffered: a full disk shows here
            except OSError as e:
                raise os_error(e, self._name) from None

    def seekable(self) -> bool:
        return True

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


FastGFile = GFile
Open = GFile


@dataclass(frozen=True)
class FileStatistics:
    """What tf.gfile.Stat returns."""
    length: int
    mtime_nsec: int
    is_directory: bool


def _checked(fn, path: str, *args):
    try:
        return fn(*args)
    except OSError as e:
        raise os_error(e, path) from None


@tf_export("gfile.Exists", "io.gfile.exists")
def Exists(filename) -> bool:
    """True when the path exists."""
    return os.path.exists(as_path(filename))


@tf_export("gfile.IsDirectory", "io.gfile.isdir")
def IsDirectory(dirname) -> bool:
    return os.path.isdir(as_path(dirname))


@tf_export("gfile.MakeDirs", "io.gfile.makedirs")
def MakeDirs(dirname) -> None:
    """Creates a directory and its parents; an existing directory is fine."""
    path = as_path(dirname)
    _checked(lambda: os.makedirs(path, exist_ok=True), path)


@tf_export("gfile.MkDir", "io.gfile.mkdir")
def MkDir(dirname) -> None:
    """Creates one directory: AlreadyExistsError when it exists, NotFoundError without a parent."""
    path = as_path(dirname)
    _checked(os.mkdir, path, path)


@tf_export("gfile.ListDirectory", "io.gfile.listdir")
def ListDirectory(dirname) -> list:
    """The entries of a directory (names, without '.' and '..'), NotFoundError when it is none."""
    path = as_path(dirname)
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    return sorted(_checked(os.listdir, path, path))


@tf_export("gfile.Glob", "io.gfile.glob")
def Glob(filename) -> list:
    """The paths matching a pattern (or each of a list of patterns)."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else list(filename)
    out = []
    for p in patterns:
        out.extend(sorted(_glob.glob(as_path(p))))
    return out


@tf_export("gfile.Remove", "io.gfile.remove")
def Remove(filename) -> None:
    path = as_path(filename)
    _checked(os.remove, path, path)


@tf_export("gfile.Rename", "io.gfile.rename")
def Rename(oldname, newname, overwrite: bool = False) -> None:
    """Renames a file: AlreadyExistsError when `newname` exists and not overwrite."""
    src, dst = as_path(oldname), as_path(newname)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, None, f"{dst}; File already exists")
    _checked(os.replace, src, src, dst)


@tf_export("gfile.Copy", "io.gfile.copy")
def Copy(oldpath, newpath, overwrite: bool = False) -> None:
    """Copies a file: AlreadyExistsError when `newpath` exists and not overwrite."""
    src, dst = as_path(oldpath), as_path(newpath)
    if not overwrite and os.path.exists(dst):
        raise errors.AlreadyExistsError(None, None, f"{dst}; File already exists")
    if os.path.isdir(src):
        raise errors.FailedPreconditionError(None, None, f"{src}; Is a directory")
    tmp = f"{dst}.tmp{os.getpid()}"
    _checked(shutil.copyfile, src, src, tmp)
    os.replace(tmp, dst)


@tf_export("gfile.Stat", "io.gfile.stat")
def Stat(filename) -> FileStatistics:
    path = as_path(filename)
    st = _checked(os.stat, path, path)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


@tf_export("gfile.DeleteRecursively", "io.gfile.rmtree")
def DeleteRecursively(dirname) -> None:
    path = as_path(dirname)
    if not os.path.exists(path):
        raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
    if os.path.isdir(path):
        _checked(shutil.rmtree, path, path)
    else:
        _checked(os.remove, path, path)


@tf_export("gfile.Walk", "io.gfile.walk")
def Walk(top, in_order: bool = True) -> Iterator:
    """Yields (dirname, subdirectory names, file names) for each directory under `top`, parents
    first (in_order) or last; nothing when `top` does not exist."""
    top = as_path(top)
    for dirpath, dirs, files in os.walk(top, topdown=in_order):
        dirs.sort()
        yield dirpath, list(dirs), sorted(files)


@tf_export("io.gfile.get_registered_schemes")
def get_registered_schemes() -> list:
    """tf.io.gfile.get_registered_schemes(): the URI schemes file names may carry: '' (a plain
    path) and 'file', the local file system, the only one here."""
    return ["", "file"]


@tf_export("io.gfile.join")
def join(path, *paths) -> str:
    """tf.io.gfile.join(path, *paths): the components joined as os.path.join does; a path with a
    scheme ("gs://b", "file:///d") is joined with "/" as a URL, on every platform."""
    if "://" in os.fspath(path)[1:]:
        return posixpath.join(path, *paths)
    return os.path.join(path, *paths)

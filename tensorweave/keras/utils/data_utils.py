"""tf.keras.utils.Sequence, the enqueuers and get_file: the base class of the data sequences
Model.fit accepts, the enqueuers that build their batches ahead in worker threads, and Keras's
cache of downloaded files (~/.keras/datasets), which works offline once the file is there and says
where to put it when it is not."""
from __future__ import annotations

import concurrent.futures
import hashlib
import os
import queue
import random
import tarfile
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.utils.generic_utils import Progbar

# Seconds a download waits on a silent connection: an offline machine fails fast, not after the
# operating system's own connect timeout.
DOWNLOAD_TIMEOUT_S = 20.0


@tf_export("keras.utils.Sequence")
class Sequence:
    """Base object for fitting to a sequence of data, such as a dataset: subclasses give
    `__getitem__(index)` (one complete batch) and `__len__` (batches per epoch), and may override
    `on_epoch_end`, which the training loop calls after each epoch."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__ (the batch at a position)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __len__ (the number of batches)")

    def on_epoch_end(self):
        """Called at the end of every epoch (a subclass shuffles here)."""

    def __iter__(self):
        """The batches in order, one pass."""
        for index in range(len(self)):
            yield self[index]


def _hasher(algorithm: str, file_hash=None):
    """Keras's choice: sha256 when asked, or for "auto" with a 64-digit hash; md5 otherwise."""
    if algorithm == "sha256" or (algorithm == "auto" and file_hash is not None and len(file_hash) == 64):
        return hashlib.sha256()
    if algorithm not in ("md5", "auto"):
        raise ValueError(f"hash_algorithm must be 'md5', 'sha256' or 'auto', not {algorithm!r}")
    return hashlib.md5()


def _digest(fpath: str, hasher, chunk_size: int = 65535) -> str:
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto", chunk_size: int = 65535) -> bool:
    """Whether the file at `fpath` has hash `file_hash` (md5 or sha256; "auto" tells them apart by
    length)."""
    return _digest(fpath, _hasher(algorithm, file_hash), chunk_size) == str(file_hash)


def _inside(path: str, base: str) -> bool:
    base = os.path.realpath(base)
    return os.path.commonpath([base, os.path.realpath(os.path.join(base, path))]) == base


def _extract_archive(file_path: str, path: str = ".", archive_format="auto") -> bool:
    """Extracts a tar or zip archive into `path` (members that would land outside it are refused);
    True when `file_path` was an archive of an asked-for format."""
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else [archive_format] if isinstance(
        archive_format, str) else list(archive_format)
    for kind in formats:
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                members = archive.getmembers()
                outside = [m.name for m in members if not _inside(m.name, path)
                           or ((m.issym() or m.islnk()) and not _inside(
                               os.path.join(os.path.dirname(m.name), m.linkname), path))]
                if outside:
                    raise ValueError(f"{file_path}: archive members would be written outside {path}: {outside}")
                archive.extractall(path, members=members)
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                outside = [n for n in archive.namelist() if not _inside(n, path)]
                if outside:
                    raise ValueError(f"{file_path}: archive members would be written outside {path}: {outside}")
                archive.extractall(path)
            return True
    return False


def _download(origin: str, fpath: str, extracted: str | None = None) -> None:
    """Fetches `origin` into `fpath` (through a temporary file, so a failed download leaves what was
    there); a failure says where to put the file by hand (or its extracted folder, `extracted`)."""
    print("Downloading data from", origin)
    directory = os.path.dirname(fpath)
    fd, partial = tempfile.mkstemp(prefix=os.path.basename(fpath) + ".", suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(origin, timeout=DOWNLOAD_TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length else None   # None when the server does not say
            progbar, done = Progbar(total), 0
            for chunk in iter(lambda: response.read(1 << 16), b""):
                out.write(chunk)
                done += len(chunk)
                progbar.update(done if total is None else min(done, total))
        os.replace(partial, fpath)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        folder = f" (or extract it to {extracted})" if extracted else ""
        raise OSError(f"URL fetch failure on {origin}: {reason}. Without network access, download "
                      f"{os.path.basename(fpath)} from {origin} elsewhere and put it at {fpath}{folder}") from e
    finally:
        if os.path.exists(partial):
            os.remove(partial)


@tf_export("keras.utils.get_file")
def get_file(fname, origin, untar=False, md5_hash=None, file_hash=None, cache_subdir="datasets",
             hash_algorithm="auto", extract=False, archive_format="auto", cache_dir=None):
    """Returns the path of file `fname` in Keras's cache, downloading it from `origin` first when it
    is not there (or its `file_hash`, md5 or sha256, does not match).

    The cache is `cache_dir/cache_subdir`, by default ~/.keras/datasets (/tmp/.keras when ~/.keras
    is not writable). `untar=True` (legacy) fetches `fname + ".tar.gz"` and returns the directory
    it extracts to; `extract=True` extracts a tar or zip archive (`archive_format`) beside the file.
    Offline, a file put at the returned path by hand is used as is: the error of a failed download
    names the URL and that path.
    """
    if origin is None:
        raise ValueError('Please specify the "origin" argument (URL of the file to download).')
    if cache_dir is None:
        cache_dir = os.path.join(os.path.expanduser("~"), ".keras")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    datadir_base = os.path.expanduser(os.fspath(cache_dir))
    try:
        os.makedirs(datadir_base, exist_ok=True)   # Keras's backend made ~/.keras on import; nothing here does
    except OSError:
        pass                                       # not writable: the fallback below
    if not os.access(datadir_base, os.W_OK):
        datadir_base = os.path.join(tempfile.gettempdir(), ".keras")
    datadir = os.path.join(datadir_base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    fname = os.fspath(fname) if fname else os.path.basename(urllib.parse.urlsplit(origin).path)
    if not fname:
        raise ValueError(f"Can't parse the file name from the origin provided: '{origin}'. "
                         "Please specify the `fname` argument.")
    untar_fpath = None
    if untar:
        untar_fpath = os.path.join(datadir, fname[:-len(".tar.gz")] if fname.endswith(".tar.gz") else fname)
        fpath = untar_fpath + ".tar.gz"
        if not os.path.exists(fpath) and os.path.isdir(untar_fpath):
            return untar_fpath     # extracted by hand, without its archive: the files are there
    else:
        fpath = os.path.join(datadir, fname)

    if not os.path.exists(fpath):
        _download(origin, fpath, untar_fpath)
        _check_hash(fpath, file_hash, hash_algorithm, origin)
    elif file_hash is not None and not validate_file(fpath, file_hash, hash_algorithm):
        print(f"A local file was found, but it seems to be incomplete or outdated because the "
              f"{_algorithm_name(hash_algorithm, file_hash)} file hash does not match the original value of "
              f"{file_hash} so we will re-download the data.")
        try:
            _download(origin, fpath, untar_fpath)
        except OSError as e:
            raise OSError(f"The file {fpath} does not match the expected {_algorithm_name(hash_algorithm, file_hash)} "
                          f"hash {file_hash} (incomplete or outdated), and downloading it again failed: {e}") from e
        _check_hash(fpath, file_hash, hash_algorithm, origin)

    if untar:
        if not os.path.exists(untar_fpath):
            _extract_archive(fpath, datadir, archive_format="tar")
        return untar_fpath
    if extract:
        _extract_archive(fpath, datadir, archive_format)
    return fpath


def _algorithm_name(algorithm: str, file_hash) -> str:
    return _hasher(algorithm, file_hash).name


def _check_hash(fpath, file_hash, algorithm, origin) -> None:
    if file_hash is not None and not validate_file(fpath, file_hash, algorithm):
        raise ValueError(f"Incomplete or corrupted file detected: {fpath} (from {origin}) does not match the expected "
                         f"{_algorithm_name(algorithm, file_hash)} hash {file_hash}.")


@tf_export("keras.utils.SequenceEnqueuer")
class SequenceEnqueuer:
    """Builds the items of `sequence` ahead of their use: start(workers, max_queue_size) runs
    `workers` threads that keep up to max_queue_size items queued; get() yields them; stop()
    ends. use_multiprocessing is accepted and served by the threads too: items are built in this
    process, so none is pickled between processes."""

    def __init__(self, sequence, use_multiprocessing=False):
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing
        self.workers = 0
        self.queue = None
        self.run_thread = None
        self.stop_signal = None

    def is_running(self):
        return self.stop_signal is not None and not self.stop_signal.is_set()

    def start(self, workers=1, max_queue_size=10):
        """Starts filling the queue with `workers` threads (at least one)."""
        self.workers = max(1, workers)
        self.queue = queue.Queue(max_queue_size)
        self.stop_signal = threading.Event()
        self.run_thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)
        self.run_thread.start()

    def stop(self, timeout=None):
        """Stops the workers and drops what they queued; waits up to `timeout` for the filling thread."""
        self.stop_signal.set()
        with self.queue.mutex:
            self.queue.queue.clear()
            self.queue.unfinished_tasks = 0
            self.queue.not_full.notify_all()
        if self.run_thread is not threading.current_thread():
            self.run_thread.join(timeout)

    def _put(self, future) -> bool:
        """Queues `future` unless stopped first (False)."""
        while not self.stop_signal.is_set():
            try:
                self.queue.put(future, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _futures(self):
        """The queued futures, in order and each done, while running."""
        while self.is_running():
            try:
                future = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            concurrent.futures.wait([future])
            if self.is_running():
                self.queue.task_done()   # taken: the last of an epoch lets the epoch end
            yield future

    def _run(self):
        raise NotImplementedError(f"{type(self).__name__} must define _run (what the workers compute)")

    def get(self):
        raise NotImplementedError(f"{type(self).__name__} must define get (the items, in order)")


@tf_export("keras.utils.OrderedEnqueuer")
class OrderedEnqueuer(SequenceEnqueuer):
    """Yields the batches of a keras.utils.Sequence in order (a new random order each epoch with
    `shuffle`), epoch after epoch, calling sequence.on_epoch_end() between epochs."""

    def __init__(self, sequence, use_multiprocessing=False, shuffle=False):
        super().__init__(sequence, use_multiprocessing)
        self.shuffle = shuffle

    def _run(self):
        executor = concurrent.futures.ThreadPoolExecutor(self.workers)
        try:
            while True:
                order = list(range(len(self.sequence)))
                if self.shuffle:
                    random.shuffle(order)
                for i in order:
                    if not self._put(executor.submit(self.sequence.__getitem__, i)):
                        return
                # The epoch ends once every batch was taken: only then may the sequence change.
                while self.queue.unfinished_tasks and not self.stop_signal.is_set():
                    self.stop_signal.wait(0.05)
                if self.stop_signal.is_set():
                    return
                self.sequence.on_epoch_end()
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def get(self):
        """The batches, endlessly while running; an error of __getitem__ stops the enqueuer and is raised."""
        for future in self._futures():
            try:
                inputs = future.result()
            except BaseException:
                self.stop()
                raise
            if inputs is not None:
                yield inputs


@tf_export("keras.utils.GeneratorEnqueuer")
class GeneratorEnqueuer(SequenceEnqueuer):
    """Yields the items of a Python generator, drawn by the worker threads (one at a time: a
    generator is not thread-safe); ends when the generator does. `random_seed` is accepted as
    Keras's (it seeds worker processes, which threads do not have)."""

    def __init__(self, generator, use_multiprocessing=False, random_seed=None):
        super().__init__(generator, use_multiprocessing)
        self.random_seed = random_seed
        self._lock = threading.Lock()

    def _next_sample(self):
        with self._lock:
            return next(self.sequence)

    def _run(self):
        executor = concurrent.futures.ThreadPoolExecutor(self.workers)
        try:
            while self._put(executor.submit(self._next_sample)):
                pass
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def get(self):
        """The generator's items while running; the generator's error stops the enqueuer and is raised."""
        for future in self._futures():
            try:
                inputs = future.result()
            except StopIteration:
                # The generator is done: what the other workers drew before it ended still counts.
                with self.queue.mutex:
                    rest = list(self.queue.queue)
                last = []
                for pending in rest:
                    try:
                        last.append(pending.result())
                    except StopIteration:
                        pass
                self.stop()
                yield from (inputs for inputs in last if inputs is not None)
                return
            except BaseException:
                self.stop()
                raise
            if inputs is not None:
                yield inputs

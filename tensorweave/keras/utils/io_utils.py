"""tf.keras.utils.HDF5Matrix: a dataset of an HDF5 file used where Keras takes a numpy array
(h5py, the "keras" extra)."""
from __future__ import annotations

import collections

import numpy as np

from tensorweave.framework.tf_export import tf_export

try:   # h5py is optional: pip install 'tensorweave[keras]'
    import h5py
except ImportError:  # pragma: no cover - exercised only without the extra
    h5py = None


@tf_export("keras.utils.HDF5Matrix")
class HDF5Matrix:
    """Rows start..end of dataset `dataset` in the HDF5 file `datapath`, read on indexing (an int,
    a slice, or a list/array of row numbers, relative to `start`), each result passed through
    `normalizer` when given. The file is opened read-only once per path and shared."""
    refs = collections.defaultdict(int)

    def __init__(self, datapath, dataset, start=0, end=None, normalizer=None):
        if h5py is None:
            raise ImportError("HDF5Matrix needs h5py: pip install 'tensorweave[keras]'")
        if datapath not in self.refs:
            self.refs[datapath] = h5py.File(datapath, "r")
        f = self.refs[datapath]
        if dataset not in f:
            raise KeyError(f"{datapath} has no dataset {dataset!r} (it holds {sorted(f)})")
        self.data = f[dataset]
        self.start = start
        self.end = self.data.shape[0] if end is None else end
        self.normalizer = normalizer

    def __len__(self):
        return self.end - self.start

    def __getitem__(self, key):
        if isinstance(key, slice):
            start = 0 if key.start is None else key.start
            stop = self.shape[0] if key.stop is None else key.stop
            last, idx = stop + self.start - 1, slice(start + self.start, stop + self.start)
        elif isinstance(key, (int, np.integer)):
            last = idx = key + self.start
        else:
            idx = [int(x) + self.start for x in np.asarray(key).reshape(-1)]
            last = max(idx) if idx else self.start
        if last >= self.end:
            raise IndexError(f"row {last - self.start} of an HDF5Matrix of {len(self)} rows")
        data = self.data[idx]
        return self.normalizer(data) if self.normalizer is not None else data

    @property
    def shape(self):
        return (self.end - self.start,) + self.data.shape[1:]

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return np.prod(self.shape)

"""tf.estimator.inputs: input_fns over in-memory arrays (numpy_input_fn) and pandas DataFrames
(pandas_input_fn; pandas is the optional extra `tensorweave[pandas]`).

TF 1.15 feeds the arrays through a queue filled by QueueRunner threads; here they are a tf.data
pipeline with the same batches: rows in order (or shuffled within each epoch), epochs one after
another, batches spanning epochs, the last one short when num_epochs is set and full-size only
when it is None."""
from __future__ import annotations

import collections
import importlib.util
import sys

import numpy as np

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.data.dataset import Dataset

__getattr__, __dir__ = _api.lazy_attributes(__name__)
_TARGET_KEY = "__target_key__"


def _features_as_ordered_dict(x) -> collections.OrderedDict:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda t: t[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({"__direct_np_input__": x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


@tf_export("estimator.inputs.numpy_input_fn")
def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1):
    """tf.estimator.inputs.numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
    queue_capacity=1000, num_threads=1): an input_fn returning batches of x (a dict of arrays, or
    an array) and y (an array, a dict of arrays, or None) as (features, labels), or features alone
    when y is None. shuffle must be given as a bool (rows are then shuffled within each epoch,
    through a buffer of queue_capacity rows); num_epochs None repeats forever."""
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is recommended to set it as True "
                         f"for training); got {shuffle}")

    def input_fn():
        data = _features_as_ordered_dict(x)
        feature_keys = list(data)
        if y is None:
            target_keys = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            ordered_y = collections.OrderedDict(sorted(y.items(), key=lambda t: t[0]))
            target_keys = list(ordered_y)
            duplicates = set(feature_keys) & set(target_keys)
            if duplicates:
                raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: {duplicates}")
            data.update(ordered_y)
        else:
            target_keys = _TARGET_KEY
            while target_keys in data:
                target_keys += "_n"
            data[target_keys] = y
        if len({np.shape(v)[0] for v in data.values()}) != 1:
            shapes_x = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                shapes_y = None
            elif isinstance(target_keys, str):
                shapes_y = y.shape
            else:
                shapes_y = {k: data[k].shape for k in target_keys}
            raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y must have the same "
                             f"length.\nShapes in x: {shapes_x}\nShapes in y: {shapes_y}\n")
        batch = _batched_rows(list(data.values()), batch_size, num_epochs, shuffle, queue_capacity)
        features = batch[0] if isinstance(x, np.ndarray) else dict(zip(feature_keys, batch[:len(feature_keys)]))
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[-1]
        return features, dict(zip(target_keys, batch[-len(target_keys):]))
    return input_fn


def _batched_rows(columns: list, batch_size, num_epochs, shuffle: bool, queue_capacity) -> list:
    """The next batch of the rows of `columns` (arrays of one length), as tensors: in order or
    shuffled through a buffer of queue_capacity rows, num_epochs times (None: forever, and every
    batch full)."""
    rows = len(columns[0])
    dataset = Dataset.from_tensor_slices(tuple(np.asarray(c) for c in columns))
    if shuffle:
        dataset = dataset.shuffle(max(1, min(queue_capacity, rows)))
    dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=num_epochs is None)
    return list(dataset.make_one_shot_iterator().get_next())


@tf_export("estimator.inputs.pandas_input_fn")
def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1,
                    target_column="target"):
    """tf.estimator.inputs.pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
    queue_capacity=1000, num_threads=1, target_column='target'): an input_fn returning batches of
    the columns of x (a pandas DataFrame) as a dict {column: tensor}, with y (a Series, named
    target_column, or a DataFrame: a dict {column: tensor}) as (features, target), or features
    alone when y is None. y's index must equal x's. shuffle must be given as a bool (rows are then
    shuffled within each epoch, through a buffer of queue_capacity rows; None: 4 * len(x) when
    shuffling, else len(x)); num_epochs None repeats forever. Batches are those numpy_input_fn
    makes of the same columns."""
    pd = sys.modules.get("pandas")   # (a DataFrame's module is loaded; pandas_input_fn never imports it)
    if pd is None and importlib.util.find_spec("pandas") is None:
        raise TypeError("pandas_input_fn should not be called without pandas installed "
                        "(pip install 'tensorweave[pandas]')")
    if pd is None or not isinstance(x, pd.DataFrame):
        raise TypeError(f"pandas_input_fn: x must be a pandas DataFrame; got {type(x).__name__}")
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is recommended to set it as True "
                         f"for training); got {shuffle}")
    if not isinstance(target_column, str):
        raise TypeError("target_column must be a string type")
    feature_keys = list(x.columns)
    # The rows' positions first (TF's queue carries the index likewise, then drops it): a frame
    # without columns still has rows to batch.
    columns = [np.arange(len(x), dtype=np.int64)] + [x[k].to_numpy() for k in feature_keys]
    target_keys = None
    if y is not None:
        if not isinstance(y, (pd.Series, pd.DataFrame)):
            raise TypeError(f"pandas_input_fn: y must be a pandas Series or DataFrame; got {type(y).__name__}")
        if target_column in x:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame already has a column "
                             f"with that name: {x.columns}")
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\nIndex for y: {y.index}\n")
        if isinstance(y, pd.DataFrame):
            target_keys = list(y.columns)
            columns += [y[k].to_numpy() for k in target_keys]
        else:
            columns.append(y.to_numpy())
    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)

    def input_fn():
        batch = _batched_rows(columns, batch_size, num_epochs, shuffle, queue_capacity)
        features = dict(zip(feature_keys, batch[1:1 + len(feature_keys)]))
        if y is None:
            return features
        if target_keys is None:
            return features, batch[-1]
        return features, dict(zip(target_keys, batch[1 + len(feature_keys):]))
    return input_fn

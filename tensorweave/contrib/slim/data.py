"""tf.contrib.slim's data pipeline: slim.dataset.Dataset (files, a reader and a decoder),
slim.tfexample_decoder (tf.train.Example records into named items: tensors, images),
slim.parallel_reader (records read from many files by several readers into one queue) and
slim.dataset_data_provider.DatasetDataProvider (a dataset's items as tensors, fed by queue
runners), with the data_decoder and data_provider bases."""
from __future__ import annotations

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import stack
from tensorweave.ops.array.core import reshape
from tensorweave.ops.control_flow.cond import case, cond
from tensorweave.ops.control_flow.functional import map_fn
from tensorweave.ops.data_flow.queues import FIFOQueue, RandomShuffleQueue
from tensorweave.ops.image.codecs import decode_image, decode_jpeg
from tensorweave.ops.image_composites import is_jpeg
from tensorweave.ops.io.decoding import decode_raw
from tensorweave.ops.io.gfile import Glob
from tensorweave.ops.io.parsing import FixedLenFeature, parse_single_example
from tensorweave.ops.math.binary import equal, logical_or
from tensorweave.ops.math.cast import cast
from tensorweave.ops.sparse.core import sparse_reshape, sparse_tensor_to_dense
from tensorweave.summary.summary import scalar
from tensorweave.train.input import string_input_producer
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner


# -- slim.dataset -------------------------------------------------------------------------------------
@tf_export("contrib.slim.dataset.Dataset")
class Dataset:
    """slim.dataset.Dataset(data_sources, reader, decoder, num_samples, items_to_descriptions,
    **kwargs): what a DatasetDataProvider reads; every argument becomes an attribute."""

    def __init__(self, data_sources, reader, decoder, num_samples, items_to_descriptions, **kwargs):
        self.__dict__.update(kwargs, data_sources=data_sources, reader=reader, decoder=decoder,
                             num_samples=num_samples, items_to_descriptions=items_to_descriptions)


# -- slim.data_decoder and slim.tfexample_decoder -----------------------------------------------------
@tf_export("contrib.slim.data_decoder.DataDecoder")
class DataDecoder:
    """The base of decoders: decode(data, items) returns the tensors of items; list_items() names
    them all."""

    def decode(self, data, items):
        raise TypeError(f"{type(self).__name__} does not define decode()")

    def list_items(self):
        raise TypeError(f"{type(self).__name__} does not define list_items()")


@tf_export("contrib.slim.tfexample_decoder.ItemHandler")
class ItemHandler:
    """Turns the parsed features named by `keys` into one item (tensors_to_item)."""

    def __init__(self, keys):
        self._keys = list(keys) if isinstance(keys, (tuple, list)) else [keys]

    @property
    def keys(self):
        return self._keys

    def tensors_to_item(self, keys_to_tensors):
        raise TypeError(f"{type(self).__name__} does not define tensors_to_item()")


@tf_export("contrib.slim.tfexample_decoder.ItemHandlerCallback")
class ItemHandlerCallback(ItemHandler):
    """An item computed by func({key: parsed tensor})."""

    def __init__(self, keys, func):
        super().__init__(keys)
        self._func = func

    def tensors_to_item(self, keys_to_tensors):
        return self._func(keys_to_tensors)


@tf_export("contrib.slim.tfexample_decoder.Tensor")
class Tensor(ItemHandler):
    """The feature tensor_key, reshaped to `shape` or to the values of the shape_keys features;
    a sparse feature made dense with default_value."""

    def __init__(self, tensor_key, shape_keys=None, shape=None, default_value=0):
        if shape_keys and shape is not None:
            raise ValueError("Cannot specify both shape_keys and shape parameters.")
        if shape_keys and not isinstance(shape_keys, list):
            shape_keys = [shape_keys]
        self._tensor_key, self._shape_keys, self._shape = tensor_key, shape_keys, shape
        self._default_value = default_value
        super().__init__([tensor_key] + list(shape_keys or []))

    def tensors_to_item(self, keys_to_tensors):
        tensor = keys_to_tensors[self._tensor_key]
        shape = self._shape
        if self._shape_keys:
            dims = [sparse_tensor_to_dense(d) if isinstance(d, SparseTensor) else d
                    for d in (keys_to_tensors[k] for k in self._shape_keys)]
            shape = reshape(stack(dims), [-1])
        if isinstance(tensor, SparseTensor):
            if shape is not None:
                tensor = sparse_reshape(tensor, shape)
            return sparse_tensor_to_dense(tensor, self._default_value)
        return reshape(tensor, shape) if shape is not None else tensor


@tf_export("contrib.slim.tfexample_decoder.Image")
class Image(ItemHandler):
    """An image decoded from the feature image_key (default 'image/encoded') by the format in
    format_key ('image/format': 'raw' for decode_raw, else JPEG, PNG, GIF or BMP by content), with
    `channels` channels, cast to dtype, reshaped to `shape` when given; with repeated, a list of
    images."""

    def __init__(self, image_key=None, format_key=None, shape=None, channels=3, dtype=dtypes.uint8, repeated=False,
                 dct_method=""):
        self._image_key = image_key or "image/encoded"
        self._format_key = format_key or "image/format"
        super().__init__([self._image_key, self._format_key])
        self._shape, self._channels, self._dtype = shape, channels, dtypes.as_dtype(dtype)
        self._repeated, self._dct_method = repeated, dct_method

    def tensors_to_item(self, keys_to_tensors):
        image_buffer = keys_to_tensors[self._image_key]
        image_format = keys_to_tensors[self._format_key]
        if self._repeated:
            return map_fn(lambda x: self._decode(x, image_format), image_buffer, dtype=self._dtype)
        return self._decode(image_buffer, image_format)

    def _decode(self, image_buffer, image_format):
        def by_content():
            return cast(decode_image(image_buffer, channels=self._channels), self._dtype)

        def jpeg():
            return cast(decode_jpeg(image_buffer, channels=self._channels, dct_method=self._dct_method), self._dtype)

        def raw():
            return decode_raw(image_buffer, out_type=self._dtype)

        is_raw = logical_or(equal(image_format, "raw"), equal(image_format, "RAW"))
        image = case({is_raw: raw}, default=lambda: cond(is_jpeg(image_buffer), jpeg, by_content), exclusive=True)
        image.set_shape([None, None, self._channels])
        return reshape(image, self._shape) if self._shape is not None else image


@tf_export("contrib.slim.tfexample_decoder.TFExampleDecoder")
class TFExampleDecoder(DataDecoder):
    """TFExampleDecoder(keys_to_features, items_to_handlers): decode(serialized_example, items)
    parses one tf.train.Example with keys_to_features and returns each item's handler's tensor."""

    def __init__(self, keys_to_features, items_to_handlers):
        self._keys_to_features = keys_to_features
        self._items_to_handlers = items_to_handlers

    def list_items(self):
        return list(self._items_to_handlers)

    def decode(self, serialized_example, items=None):
        example = parse_single_example(serialized_example, self._keys_to_features)
        for key in sorted(self._keys_to_features):   # reshape fixed features once, in a fixed order
            feature = self._keys_to_features[key]
            if isinstance(feature, FixedLenFeature):
                example[key] = reshape(example[key], feature.shape)
        outputs = []
        for item in items or self._items_to_handlers:
            handler = self._items_to_handlers[item]
            outputs.append(handler.tensors_to_item({key: example[key] for key in handler.keys}))
        return outputs


_string, _float32 = dtypes.string, dtypes.float32   # parallel_read's `dtypes` argument hides the module


# -- slim.parallel_reader ---------------------------------------------------------------------------
@tf_export("contrib.slim.parallel_reader.get_data_files")
def get_data_files(data_sources) -> list:
    """The files of data_sources: file names, or glob patterns, or a list of them."""
    if isinstance(data_sources, (list, tuple)):
        files = [f for source in data_sources for f in get_data_files(source)]
    elif any(c in data_sources for c in "*?["):
        files = Glob(data_sources)
    else:
        files = [data_sources]
    if not files:
        raise ValueError(f"No data files found in {data_sources}")
    return files


@tf_export("contrib.slim.parallel_reader.ParallelReader")
class ParallelReader:
    """ParallelReader(reader_class, common_queue, num_readers=4, reader_kwargs=None): num_readers
    readers of reader_class, each reading from the filename queue into common_queue (a queue of
    [key, value] string pairs) in a queue runner; read(queue) dequeues one (key, value)."""

    def __init__(self, reader_class, common_queue, num_readers=4, reader_kwargs=None):
        if len(common_queue.dtypes) != 2:
            raise TypeError("common_queue.dtypes must be [key, value]")
        self._readers = [reader_class(**(reader_kwargs or {})) for _ in range(num_readers)]
        self._common_queue = common_queue

    def read(self, queue, name=None):
        enqueue_ops = [self._common_queue.enqueue(reader.read(queue)) for reader in self._readers]
        add_queue_runner(QueueRunner(self._common_queue, enqueue_ops))
        return self._common_queue.dequeue(name=name)


@tf_export("contrib.slim.parallel_reader.parallel_read")
def parallel_read(data_sources, reader_class, num_epochs=None, num_readers=4, reader_kwargs=None, shuffle=True,
                  dtypes=None, capacity=256, min_after_dequeue=128, seed=None, scope=None):
    """(key, value) of records read from data_sources by num_readers readers into one queue
    (shuffled with at least min_after_dequeue waiting, or in file order), num_epochs times over
    the files (forever when None)."""
    files = get_data_files(data_sources)
    with name_scope(scope, "parallel_read"):
        filename_queue = string_input_producer(files, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                                               name="filenames")
        kinds = dtypes or [_string, _string]
        if shuffle:
            common_queue = RandomShuffleQueue(capacity=capacity, min_after_dequeue=min_after_dequeue, dtypes=kinds,
                                              seed=seed, name="common_queue")
        else:
            common_queue = FIFOQueue(capacity=capacity, dtypes=kinds, name="common_queue")
        scalar(f"fraction_of_{capacity}_full", cast(common_queue.size(), _float32) * (1.0 / capacity))
        return ParallelReader(reader_class, common_queue, num_readers=num_readers,
                              reader_kwargs=reader_kwargs).read(filename_queue)


# -- slim.data_provider and slim.dataset_data_provider --------------------------------------------
@tf_export("contrib.slim.data_provider.DataProvider")
class DataProvider:
    """DataProvider(items_to_tensors, num_samples): get(items) returns the tensors of items."""

    def __init__(self, items_to_tensors, num_samples):
        self._items_to_tensors = items_to_tensors
        self._num_samples = num_samples

    def get(self, items):
        if not isinstance(items, (list, tuple)):
            raise ValueError("items must be a list or tuple")
        for item in items:
            if item not in self._items_to_tensors:
                raise ValueError(f"Item [{item}] is invalid. Valid entries include: {self.list_items()}")
        return [self._items_to_tensors[item] for item in items]

    def list_items(self):
        return list(self._items_to_tensors)

    def num_samples(self):
        return self._num_samples


@tf_export("contrib.slim.dataset_data_provider.DatasetDataProvider")
class DatasetDataProvider(DataProvider):
    """DatasetDataProvider(dataset, num_readers=1, reader_kwargs=None, shuffle=True,
    num_epochs=None, common_queue_capacity=256, common_queue_min=128, record_key='record_key',
    seed=None, scope=None): the items of dataset's decoder, decoded from records read by
    parallel_read, and record_key: the key of the record (file:record number). Start the graph's
    queue runners to run it."""

    def __init__(self, dataset, num_readers=1, reader_kwargs=None, shuffle=True, num_epochs=None,
                 common_queue_capacity=256, common_queue_min=128, record_key="record_key", seed=None, scope=None):
        key, data = parallel_read(dataset.data_sources, reader_class=dataset.reader, num_epochs=num_epochs,
                                  num_readers=num_readers, reader_kwargs=reader_kwargs, shuffle=shuffle,
                                  capacity=common_queue_capacity, min_after_dequeue=common_queue_min, seed=seed,
                                  scope=scope)
        items = dataset.decoder.list_items()
        items_to_tensors = dict(zip(items, dataset.decoder.decode(data, items)))
        if record_key in items_to_tensors:
            raise ValueError(f"The item name used for `record_key` cannot also be used for a dataset item: "
                             f"{record_key}")
        items_to_tensors[record_key] = key
        super().__init__(items_to_tensors, dataset.num_samples)

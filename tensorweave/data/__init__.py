"""tf.data: datasets and iterators (ops/data/)."""
from __future__ import annotations

from tensorweave import _api
from tensorweave.framework.tf_export import tf_export

__getattr__, __dir__ = _api.lazy_attributes(__name__)   # the names tf.data gathers from elsewhere


@tf_export("data.make_one_shot_iterator")
def make_one_shot_iterator(dataset):
    """tf.data.make_one_shot_iterator(dataset): dataset.make_one_shot_iterator()."""
    return dataset.make_one_shot_iterator()


@tf_export("data.make_initializable_iterator")
def make_initializable_iterator(dataset, shared_name=None):
    """tf.data.make_initializable_iterator(dataset, shared_name=None)."""
    return dataset.make_initializable_iterator(shared_name)


@tf_export("data.get_output_types")
def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


@tf_export("data.get_output_shapes")
def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


@tf_export("data.get_output_classes")
def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes

"""tf.nest and tensorflow.python.util.nest: the structures and errors TF 2.21's tf.nest gave for
the same calls (recorded by hand from /opt/tfvenv; the outputs are short enough to read here)."""
from __future__ import annotations

import collections

import pytest

import tensorweave as tf
from tensorweave.python.client import device_lib
from tensorweave.python.util import nest

P = collections.namedtuple("P", "a b")


def test_flatten_and_pack_follow_sorted_dict_keys_and_namedtuples():
    structure = {"b": [1, (2, 3)], "a": P(4, {"y": 5, "x": 6})}
    assert tf.nest.flatten(structure) == [4, 6, 5, 1, 2, 3]
    template = {"b": [0, (0, 0)], "a": P(0, {"y": 0, "x": 0})}
    assert tf.nest.pack_sequence_as(template, list(range(6))) == {"b": [3, (4, 5)], "a": P(0, {"y": 2, "x": 1})}
    with pytest.raises(ValueError, match="Structure had 2 elements, but flat_sequence had 3"):
        tf.nest.pack_sequence_as([0, 0], [1, 2, 3])


@pytest.mark.parametrize("a, b, error", [([1, 2], (1, 2), TypeError), ([1, [2]], [1, 2], ValueError),
                                         ({"a": 1}, {"b": 1}, ValueError), ([1, 2], [1], ValueError)])
def test_assert_same_structure_raises_tfs_classes(a, b, error):
    with pytest.raises(error, match="don't have the same"):
        tf.nest.assert_same_structure(a, b)


def test_map_structure_checks_types_unless_told_not_to():
    with pytest.raises(TypeError):
        tf.nest.map_structure(lambda x, y: x + y, [1, 2], (1, 2))
    assert tf.nest.map_structure(lambda x, y: x + y, [1, 2], (1, 2), check_types=False) == [2, 4]
    assert tf.nest.map_structure(lambda x: -x, P(1, [2])) == P(-1, [-2])


def test_composites_expand_only_when_asked():
    s = tf.SparseTensor([[0, 0]], [1.0], [2, 2])
    assert tf.nest.flatten(s) == [s]
    parts = tf.nest.flatten(s, expand_composites=True)
    assert parts == [s.indices, s.values, s.dense_shape]
    back = tf.nest.pack_sequence_as(s, parts, expand_composites=True)
    assert isinstance(back, tf.SparseTensor) and back.values is s.values
    assert (tf.nest.is_nested([]), tf.nest.is_nested("ab"), tf.nest.is_nested({})) == (True, False, True)


def test_python_util_nest_is_the_same_module_of_names():
    assert nest.flatten is tf.nest.flatten and nest.is_sequence is tf.nest.is_nested


def test_device_lib_lists_this_process_cpu_as_tf():
    device, = device_lib.list_local_devices()
    assert (device.name, device.device_type, device.memory_limit) == ("/device:CPU:0", "CPU", 268435456)
    assert device.incarnation != 0
    assert type(device).FromString(device.SerializeToString()) == device

"""Issue 28's vision and misc names against values recorded from TensorFlow 2.21
(fixtures/record_tf_vision_misc.py): outputs and gradients, TF's orderings and paddings."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from fixtures.tf_values_cases import case_fetches, decode, encode_output, resolve
from fixtures.vision_misc_cases import CASES, GLIMPSE_CASES, GLIMPSE_IMAGE, JPEG_CASES, PROTO_CASES, build_export_graph

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(FIX, "tf_vision_misc.json")) as _f:
    _RECORDED = json.load(_f)["cases"]


def _compare(ours, theirs, what: str) -> None:
    if hasattr(ours, "indices") and np.ndim(ours.indices) == 1:   # a sparse gradient: the dense tensor it stands for
        ours = encode_output(ours)
    if isinstance(ours, tf.SparseTensorValue):
        assert isinstance(theirs, dict) and "sparse" in theirs, what
        for part, a, b in zip(("indices", "values", "dense_shape"), ours, theirs["sparse"]):
            _compare(np.asarray(a), b, f"{what}.{part}")
        return
    if isinstance(ours, (list, tuple)):   # a tuple of results
        assert len(ours) == len(theirs), what
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _compare(a, b, f"{what}[{i}]")
        return
    ours = np.asarray(ours)
    if ours.dtype == object:   # strings
        assert ours.reshape(-1).tolist() == [t.encode() if isinstance(t, str) else t
                                            for t in np.asarray(theirs, dtype=object).reshape(-1)], what
        return
    theirs = np.asarray(theirs, np.float64)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    np.testing.assert_allclose(ours.astype(np.float64), theirs, rtol=1e-4, atol=1e-5, err_msg=what)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    with tf.Graph().as_default():
        fetch = case_fetches(tf, CASES[name])
        with tf.Session() as sess:
            values = sess.run(fetch)
    assert set(_RECORDED[name]) == set(fetch)
    for key, recorded in _RECORDED[name].items():
        _compare(values[key], recorded, f"{name}: {key}")


@pytest.mark.parametrize("name", sorted(JPEG_CASES))
def test_jpeg_headers_and_crops_match_tensorflow(name):
    path, args, kwargs = JPEG_CASES[name]
    with open(os.path.join(FIX, "tf_image.jpg"), "rb") as f:
        jpg = f.read()
    with tf.Graph().as_default(), tf.Session() as sess:
        kwargs = {k: decode(v, tf) for k, v in kwargs.items()}
        got = sess.run(resolve(tf, path)(jpg, *args, **kwargs))
    want = np.asarray(_RECORDED[name]["value"])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1)   # decoders may round one step apart


@pytest.mark.parametrize("name", sorted(PROTO_CASES))
def test_make_tensor_proto_writes_tensorflows_bytes(name):
    values, kwargs = PROTO_CASES[name]
    proto = tf.make_tensor_proto(values, **{k: decode(v, tf) for k, v in kwargs.items()})
    assert proto.SerializeToString().hex() == _RECORDED[name]["proto"]
    back = tf.make_ndarray(proto)   # read back: the values, filled out to the shape by the last one
    flat = np.asarray(values).reshape(-1)
    flat = flat.astype(object) if flat.dtype.kind == "U" else flat
    want = np.concatenate([flat, np.repeat(flat[-1:], back.size - flat.size)]).reshape(back.shape)
    if back.dtype == object:
        assert back.tolist() == np.vectorize(str.encode, otypes=[object])(want).tolist()
    else:
        np.testing.assert_allclose(back, want.astype(back.dtype))


@pytest.mark.parametrize("name", sorted(GLIMPSE_CASES))
def test_extract_glimpse_matches_tensorflow_inside_the_image(name):
    size, offsets, kwargs = GLIMPSE_CASES[name]
    image = decode(GLIMPSE_IMAGE, tf)
    with tf.Graph().as_default(), tf.Session() as sess:
        glimpse = tf.image.extract_glimpse(image, size, offsets, **kwargs)
        first, second = sess.run(glimpse), sess.run(glimpse)
    theirs = [np.asarray(r, np.float32) for r in _RECORDED[name]["runs"]]
    inside = theirs[0] == theirs[1]   # TF's noise differs between runs; the image does not
    assert first.shape == theirs[0].shape and glimpse.shape.as_list() == list(first.shape)
    np.testing.assert_array_equal(first == second, inside)
    np.testing.assert_array_equal(first[inside], theirs[0][inside])
    for b in range(image.shape[0]):   # the noise spans the image's range of values
        noise = first[b][~inside[b]]
        assert ((noise >= image[b].min()) & (noise <= image[b].max())).all()


def test_tensorflow_computes_the_same_from_our_graph_def_of_the_new_ops():
    # the recording script had TF 2.21 import our GraphDef of this graph (every node's attributes
    # in TF's OpDefs) and run it
    recorded = _RECORDED["exported_graph"]
    with tf.Graph().as_default():
        fetches = build_export_graph(tf)
        assert [t.name for t in fetches] == recorded["names"]
        with tf.Session() as sess:
            values = sess.run(fetches)
    for name, ours, theirs in zip(recorded["names"], values, recorded["values"]):
        _compare(ours, theirs, name)

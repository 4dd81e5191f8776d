"""tf.io's protobuf and image additions against TF 2.21's recorded results: decode_proto /
encode_proto over a FileDescriptorSet file and the local pool (fixtures/tf_proto_ops.json,
record_tf_proto_ops.py), decode_json_example, parse_example's SparseFeature, decode_webp
(fixtures/tf_webp.json, record_tf_webp.py); and tf.io.gfile.join / get_registered_schemes."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf

from fixtures.proto_cases import EXAMPLES_JSON, FIELDS, TEXT_CASE, TYPES, file_descriptor_set, messages, sample_class
from fixtures.recorded import assert_same, decode

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
with open(os.path.join(FIXTURES, "tf_proto_ops.json")) as _f:
    RECORDED = json.load(_f)
with open(os.path.join(FIXTURES, "tf_webp.json")) as _f:
    WEBP = json.load(_f)

pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture
def source(tmp_path) -> str:
    path = str(tmp_path / "weave_test.desc")
    with open(path, "wb") as f:
        f.write(file_descriptor_set())
    return path


def _run(fetch, feed=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed)


def _assert_decoded(result, recorded):
    sizes, values = _run([result.sizes, result.values])
    assert_same([sizes] + list(values), [recorded["sizes"]] + recorded["values"])


def test_decode_proto_matches_tf(source):
    types = [getattr(tf, t) for t in TYPES]
    result = tf.io.decode_proto(messages(), "weave.Sample", FIELDS, types, descriptor_source=source)
    assert result.sizes.shape.as_list() == [3, len(FIELDS)] and result.values[1].shape.as_list() == [3, None]
    _assert_decoded(result, RECORDED["decode"])


def test_decode_proto_batch_and_text(source):
    batch = np.array([messages(), messages()[::-1]], dtype=object)
    _assert_decoded(tf.io.decode_proto(batch, "weave.Sample", ["floats", "i32"], [tf.float32, tf.int64],
                                       descriptor_source=source), RECORDED["decode_batch"])
    _assert_decoded(tf.io.decode_proto([TEXT_CASE], "weave.Sample", ["i32", "floats", "text"],
                                       [tf.int32, tf.float32, tf.string], descriptor_source=source,
                                       message_format="text"), RECORDED["decode_text"])


def test_unsigned_fields_read_as_signed_are_twos_complement(source):
    # TF 1.15's documented reading: uint64 as int64 with the same bits, uint32 as int32 likewise
    got = _run(tf.io.decode_proto(messages()[:1], "weave.Sample", ["u64", "u32"], [tf.int64, tf.int32],
                                  descriptor_source=source).values)
    assert got[0].tolist() == [[np.array(2**63 + 5, np.uint64).astype(np.int64)]] and got[1].tolist() == [[-1]]


def test_encode_proto_matches_tf(source):
    types = [getattr(tf, t) for t in TYPES]
    decoded = tf.io.decode_proto(messages(), "weave.Sample", FIELDS, types, descriptor_source=source)
    encoded = tf.io.encode_proto(decoded.sizes, decoded.values, FIELDS, "weave.Sample", descriptor_source=source)
    partial = tf.io.encode_proto([[1, 2], [0, 1]], [tf.constant([[3, 0], [4, 0]], tf.int32),
                                                    tf.constant([[1.0, 2.0], [5.0, 6.0]])],
                                 ["i32", "floats"], "weave.Sample", descriptor_source=source)
    assert encoded.shape.as_list() == [3]
    got = _run([encoded, partial])
    assert got[0].tolist() == decode(RECORDED["encode_round_trip"]).tolist() == messages()
    assert got[1].tolist() == decode(RECORDED["encode_partial"]).tolist()


def test_decode_proto_from_the_local_pool():
    example = tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0, 2.0]))}))
    sizes, (features,) = _run(tf.io.decode_proto([example.SerializeToString()], "tensorflow.Example", ["features"],
                                                 [tf.string]))
    assert sizes.tolist() == [[1]]
    assert tf.train.Features.FromString(features[0, 0]) == example.features


@pytest.mark.parametrize("case,build", [
    ("wrong_type", lambda s: tf.io.decode_proto(messages(), "weave.Sample", ["floats"], [tf.int32],
                                                descriptor_source=s)),
    ("unknown_type", lambda s: tf.io.decode_proto(messages(), "weave.Nope", ["floats"], [tf.float32],
                                                  descriptor_source=s)),
    ("unknown_field", lambda s: tf.io.decode_proto(messages(), "weave.Sample", ["nope"], [tf.int32],
                                                   descriptor_source=s)),
    ("bad_bytes", lambda s: tf.io.decode_proto([b"\xff\xff"], "weave.Sample", ["i32"], [tf.int32],
                                               descriptor_source=s)),
    ("size_too_large", lambda s: tf.io.encode_proto([[3]], [tf.constant([[1, 2]], tf.int32)], ["i32"],
                                                    "weave.Sample", descriptor_source=s)),
])
def test_proto_op_errors_are_tf_s(source, case, build):
    recorded = RECORDED["errors"][case]
    error_class = getattr(tf.errors, recorded.split(":")[0])
    fetch = build(source)
    with pytest.raises(error_class) as info:
        _run(fetch)
    op = "EncodeProto" if case == "size_too_large" else "DecodeProtoV2"
    assert op in str(info.value)
    if case != "bad_bytes":   # protobuf's parser words its complaint its own way
        want = recorded.split("}} ", 1)[1].rsplit(" [Op:", 1)[0]
        want = want.replace("DT_INT32", "int32")   # TF spells the dtype as its enum
        assert want in str(info.value)


def test_decode_proto_descriptor_file_errors(tmp_path):
    bad = tmp_path / "bad.desc"
    bad.write_bytes(b"not a descriptor set \xff")
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a serialized FileDescriptorSet"):
        _run(tf.io.decode_proto(messages(), "weave.Sample", ["i32"], [tf.int32], descriptor_source=str(bad)))
    with pytest.raises(tf.errors.NotFoundError, match="cannot read descriptor_source"):
        _run(tf.io.decode_proto(messages(), "weave.Sample", ["i32"], [tf.int32],
                                descriptor_source=str(tmp_path / "missing.desc")))


def test_decode_json_example_gives_tf_s_examples():
    got = _run(tf.io.decode_json_example(EXAMPLES_JSON))
    want = decode(RECORDED["decode_json_example"])
    assert got.shape == want.shape == (3,)
    for ours, theirs in zip(got, want):   # the same messages (a map's serialized order is not fixed)
        assert tf.train.Example.FromString(ours) == tf.train.Example.FromString(theirs)
    with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeJSONExample.*JSON example 1"):
        _run(tf.decode_json_example(["{}", "not json"]))


def test_parse_example_sparse_feature_matches_tf():
    serialized = tf.io.decode_json_example(EXAMPLES_JSON)
    parsed = tf.io.parse_example(serialized, {
        "one": tf.io.SparseFeature("ix", "val", tf.float32, 6),
        "two": tf.SparseFeature(["ix", "iy"], "val", tf.float32, [5, 3]),
        "iy": tf.io.VarLenFeature(tf.int64)})
    single = tf.io.parse_single_example(serialized[0], {
        "one": tf.io.SparseFeature("ix", "val", tf.float32, 6, already_sorted=True)})
    got, got_single = _run([parsed, single])
    assert sorted(got) == ["iy", "one", "two"]   # the raw index and value features are not returned
    for key, want in RECORDED["parse_sparse_feature"].items():
        assert_same([got[key].indices, got[key].values, got[key].dense_shape], want)
    one = got_single["one"]
    assert_same([one.indices, one.values, one.dense_shape], RECORDED["parse_single_sparse_feature"])


def test_sparse_feature_conflicts():
    with pytest.raises(ValueError, match="Conflicting type"):
        tf.io.parse_example(["x"], {"sp": tf.io.SparseFeature("ix", "val", tf.float32, 4),
                                    "ix": tf.io.FixedLenFeature([1], tf.int64)})
    with pytest.raises(ValueError, match="same number of entries"):
        tf.io.parse_example(["x"], {"sp": tf.io.SparseFeature(["a", "b"], "val", tf.float32, 4)})


@pytest.mark.parametrize("key", sorted(k for k in WEBP if k != "not_webp"))
def test_decode_webp_matches_tf(key):
    name, channels = key.split("_channels_")
    with open(os.path.join(FIXTURES, f"tf_image_{name}.webp"), "rb") as f:
        data = f.read()
    image = tf.io.decode_webp(data, channels=int(channels))
    if isinstance(WEBP[key], str):
        with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeWebP.*" + WEBP[key].split("}} ")[1]
                           .rsplit(" [Op:", 1)[0]):
            _run(image)
    else:
        assert_same([_run(image)], [WEBP[key]])


def test_decode_webp_refuses_what_tf_refuses():
    with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeWebP.*Failed to decode WebP header"):
        _run(tf.image.decode_webp(b"RIFFxxxxWEBPjunk"))
    assert "Failed to decode WebP header" in WEBP["not_webp"]
    with pytest.raises(ValueError, match="WebP only supports 3 or 4 channels"):
        tf.io.decode_webp(b"", channels=1)


def test_gfile_join_and_schemes():
    assert tf.io.gfile.join("gs://bucket/dir", "a", "b.txt") == "gs://bucket/dir/a/b.txt"
    assert tf.io.gfile.join("ram://folder", "file.py") == "ram://folder/file.py"
    assert tf.io.gfile.join("folder", "file.py") == os.path.join("folder", "file.py")
    assert tf.io.gfile.join("/abs", "/root") == "/root"   # as os.path.join
    assert set(tf.io.gfile.get_registered_schemes()) == {"", "file"}


def test_sample_class_round_trip():
    # the fixture's message class parses what it wrote (guards the recorded cases' inputs)
    cls = sample_class()
    assert cls.FromString(messages()[0]).inner.v == 42

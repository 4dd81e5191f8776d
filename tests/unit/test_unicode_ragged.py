"""tf.strings unicode_decode(_with_offsets), unicode_split(_with_offsets), bytes_split and ngrams:
TensorFlow's recorded results (fixtures/tf_ragged.json), Python's codecs as the reference for
every encoding and error mode, and the error cases."""
from __future__ import annotations

import numpy as np
import pytest
from ragged_cases import case_id, cases, check_case
from unit_helpers import run

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

CODECS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
TEXTS = ["", "h\u00e9llo", "\u20ac \U0001F600 z", "\u4e2d\u6587\n\x01"]


def _garbled(codec: str, seed: int) -> list:
    """Valid strings with random bytes flipped, cut or inserted: every kind of invalid sequence."""
    rng = np.random.RandomState(seed)
    out = []
    for text in TEXTS:
        data = bytearray(text.encode(codec))
        for _ in range(3):
            kind = rng.randint(3)
            pos = rng.randint(len(data) + 1)
            if kind == 0 and data:
                data[min(pos, len(data) - 1)] = rng.randint(256)
            elif kind == 1:
                data.insert(pos, rng.randint(128, 256))
            else:
                del data[pos:pos + 1]
        out.append(bytes(data))
    return out


@pytest.mark.parametrize("case", cases("strings."), ids=case_id)
def test_matches_tensorflow(case):
    check_case(case)


@pytest.mark.parametrize("errors", ["replace", "ignore"])
@pytest.mark.parametrize("encoding", sorted(CODECS))
def test_decode_matches_python_codecs(encoding, errors):
    codec = CODECS[encoding]
    data = [t.encode(codec) for t in TEXTS] + _garbled(codec, 1) + _garbled(codec, 2)
    cps = tf.strings.unicode_decode(data, encoding, errors=errors)
    chars = tf.strings.unicode_split(data, encoding, errors=errors)
    got_cps, got_chars = run([cps, chars])
    want = [d.decode(codec, errors) for d in data]
    assert got_cps.to_list() == [[ord(c) for c in w] for w in want]
    assert got_chars.to_list() == [[c.encode(codec) for c in w] for w in want]


@pytest.mark.parametrize("encoding", sorted(CODECS))
def test_offsets_are_where_each_character_starts(encoding):
    codec = CODECS[encoding]
    data = [t.encode(codec) for t in TEXTS]
    (cps, offsets), (chars, char_offsets) = run([tf.strings.unicode_decode_with_offsets(data, encoding),
                                                 tf.strings.unicode_split_with_offsets(data, encoding)])
    for text, row, starts, pieces, starts2 in zip(TEXTS, cps.to_list(), offsets.to_list(), chars.to_list(),
                                                  char_offsets.to_list()):
        expected = np.cumsum([0] + [len(c.encode(codec)) for c in text])[:-1].tolist()
        assert row == [ord(c) for c in text] and starts == expected == starts2
        assert pieces == [c.encode(codec) for c in text]


def test_replacement_char_and_control_characters():
    got = run(tf.strings.unicode_decode([b"a\xff\x01"], "UTF-8", replacement_char=ord("?"),
                                        replace_control_characters=True))
    assert got.to_list() == [[97, 63, 63]]


@pytest.mark.parametrize("fn", [tf.strings.unicode_decode, tf.strings.unicode_decode_with_offsets,
                                tf.strings.unicode_split, tf.strings.unicode_split_with_offsets])
def test_strict_errors_name_the_op(fn):
    out = fn(["ok", b"a\xc3("], "UTF-8", errors="strict")
    with pytest.raises(tf.errors.InvalidArgumentError, match="UnicodeDecode") as err:
        run(out)
    assert "element 1" in str(err.value)


def test_result_kinds_follow_the_input_rank():
    scalar = tf.strings.unicode_decode("h\u00e9", "UTF-8")
    vector = tf.strings.unicode_decode(["h\u00e9"], "UTF-8")
    matrix = tf.strings.unicode_decode([["a"], ["bc"]], "UTF-8")
    ragged_in = tf.strings.unicode_decode(tf.ragged.constant([["a", "bc"], []]), "UTF-8")
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32 and scalar.shape.ndims == 1
    assert isinstance(vector, tf.RaggedTensor) and vector.ragged_rank == 1
    assert isinstance(matrix, tf.RaggedTensor) and matrix.ragged_rank == 2
    got = run([scalar, vector, matrix, ragged_in])
    np.testing.assert_array_equal(got[0], [104, 233])
    assert got[1].to_list() == [[104, 233]]
    assert got[2].to_list() == [[[97]], [[98, 99]]]
    assert got[3].to_list() == [[[97], [98, 99]], []]


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="Rank of `input`"):
        tf.strings.unicode_decode(tf.placeholder(tf.string), "UTF-8")
    with pytest.raises(ValueError, match="input_encoding"):
        tf.strings.unicode_decode(["a"], "EBCDIC")
    with pytest.raises(ValueError, match="errors"):
        tf.strings.unicode_split(["a"], "UTF-8", errors="loose")
    with pytest.raises(TypeError):
        tf.strings.unicode_decode([1, 2], "UTF-8")


def test_bytes_split_against_python():
    data = [b"", b"abc", "h\u00e9".encode()]
    assert run(tf.strings.bytes_split(data)).to_list() == [[bytes([c]) for c in d] for d in data]
    assert [bytes(b) for b in run(tf.strings.bytes_split(b"xy"))] == [b"x", b"y"]


def _ngrams_reference(row: list, width: int, pad: str, pad_width: int) -> list:
    padded = [pad] * pad_width + row + [pad] * pad_width
    return [" ".join(padded[i:i + width]) for i in range(len(padded) - width + 1)]


def test_ngrams_ragged_and_dense_against_python():
    rows = [["a", "b", "c", "d"], ["e"], [], ["f", "g"]]
    ragged = tf.strings.ngrams(tf.ragged.constant(rows), 3, pad_values="_", padding_width=1)
    dense = tf.strings.ngrams(tf.constant([["a", "b", "c"], ["d", "e", "f"]]), 2)
    got_ragged, got_dense = run([ragged, dense])
    assert got_ragged.to_list() == [[g.encode() for g in _ngrams_reference(r, 3, "_", 1)] for r in rows]
    assert got_dense.shape == (2, 2)
    assert got_dense.tolist() == [[b"a b", b"b c"], [b"d e", b"e f"]]


def test_ngrams_argument_errors():
    with pytest.raises(ValueError, match="padding_width must be greater than 0"):
        tf.strings.ngrams(["a"], 2, pad_values="x", padding_width=0)
    with pytest.raises(ValueError, match="pad_values must be provided"):
        tf.strings.ngrams(["a"], 2, padding_width=1)
    with pytest.raises(ValueError, match="ngram_widths must be greater than 0"):
        tf.strings.ngrams(["a"], 0)
    with pytest.raises(ValueError, match="rank>0"):
        tf.strings.ngrams("a", 2)

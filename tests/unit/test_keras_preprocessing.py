"""tf.keras.preprocessing (sequence, text, image) against TF 2.15's Keras: the cases of
fixtures/keras_preprocessing_cases.py, recorded by fixtures/record_keras_preprocessing.py; and the
errors of bad input."""
import importlib.util
import json
import os

import numpy as np
import pytest
from fixtures.keras_preprocessing_cases import (DIRECTORY_FLOW, image_cases, jsonable, sequence_cases, text_cases,
                                                write_class_folders)

import tensorweave as tf

needs_pillow = pytest.mark.skipif(importlib.util.find_spec("PIL") is None, reason="Pillow (the image extra)")
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "keras_preprocessing.json")
with open(FIXTURE) as f:
    RECORDED = json.load(f)


def _assert_same(got, want, where="output"):
    if isinstance(want, dict) and "dtype" in want and "values" in want:
        assert isinstance(got, dict) and got.get("dtype") == want["dtype"], f"{where}: dtype {got} vs {want['dtype']}"
        assert got["shape"] == want["shape"], f"{where}: shape {got['shape']} vs {want['shape']}"
        if np.dtype(want["dtype"]).kind == "f":
            np.testing.assert_allclose(got["values"], want["values"], rtol=1e-5, atol=1e-4, err_msg=where)
        else:
            assert got["values"] == want["values"], where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{where}: keys {got} vs {sorted(want)}"
        for k in want:
            _assert_same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got} vs {want}"
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6), where
    else:
        assert got == want, f"{where}: {got!r} vs {want!r}"


def _check(section, outputs):
    recorded = RECORDED[section]
    assert sorted(outputs) == sorted(recorded)
    for name, value in outputs.items():
        _assert_same(jsonable(value), recorded[name], f"{section}.{name}")


def test_sequence_matches_keras():
    _check("sequence", sequence_cases(tf.keras.preprocessing.sequence))


def test_text_matches_keras():
    _check("text", text_cases(tf.keras.preprocessing.text))


@needs_pillow
def test_image_matches_keras(tmp_path):
    _check("image", image_cases(tf.keras.preprocessing.image, str(tmp_path)))


def test_timeseries_generator_is_a_keras_sequence():
    gen = tf.keras.preprocessing.sequence.TimeseriesGenerator(np.arange(10), np.arange(10), length=2, batch_size=3)
    assert isinstance(gen, tf.keras.utils.Sequence)
    assert [len(x) for x, _ in gen] == [3, 3, 2]
    assert json.loads(gen.to_json())["config"]["length"] == 2


def test_pad_sequences_errors_name_the_bad_input():
    pad = tf.keras.preprocessing.sequence.pad_sequences
    with pytest.raises(ValueError, match="non-iterable: 3 at position 1"):
        pad([[1, 2], 3])
    with pytest.raises(ValueError, match="position 1 is different"):
        pad([[[1, 2]], [[1, 2, 3]]])
    with pytest.raises(ValueError, match="sequence at position 0 is not a sequence of equal-shaped elements"):
        pad([[1, [2, 3]]])
    with pytest.raises(ValueError, match="sequence at position 1 is not a sequence of int32 elements"):
        pad([[1], ["x"]])
    with pytest.raises(ValueError, match='Padding type "middle"'):
        pad([[1]], padding="middle")
    with pytest.raises(ValueError, match="dtype=object"):
        pad([["a"]], value="x")
    with pytest.raises(ValueError, match="must be iterable"):
        pad(5)


def test_tokenizer_errors_name_the_bad_text():
    tok = tf.keras.preprocessing.text.Tokenizer()
    with pytest.raises(TypeError, match=r"text 1 must be a str, got int: 7"):
        tok.fit_on_texts(["fine", 7])
    with pytest.raises(TypeError, match="list of texts, not one str"):
        tok.fit_on_texts("one text")
    with pytest.raises(ValueError, match="Specify a dimension"):
        tf.keras.preprocessing.text.Tokenizer().texts_to_matrix(["a"])
    tok.fit_on_texts(["a b"])
    with pytest.raises(ValueError, match="Unknown vectorization mode: 'tf'"):
        tok.texts_to_matrix(["a"], mode="tf")
    with pytest.raises(ValueError, match="lacks 'word_counts'"):
        tf.keras.preprocessing.text.tokenizer_from_json('{"config": {}}')


def test_apply_affine_transform_defaults_to_channels_last():
    im = tf.keras.preprocessing.image
    x = np.random.RandomState(0).uniform(size=(5, 6, 2))
    np.testing.assert_array_equal(im.apply_affine_transform(x, theta=30, zx=0.8),
                                  im.apply_affine_transform(x, theta=30, zx=0.8, row_axis=0, col_axis=1,
                                                            channel_axis=2))
    with pytest.raises(ValueError, match="rank 3"):
        im.apply_affine_transform(x[0], theta=1)


@needs_pillow
def test_image_errors_name_the_bad_input(tmp_path):
    im = tf.keras.preprocessing.image
    with pytest.raises(ValueError, match="should have rank 4"):
        im.ImageDataGenerator().flow(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="same length"):
        im.ImageDataGenerator().flow(np.zeros((2, 3, 3, 1)), [0])
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        im.ImageDataGenerator(validation_split=1.5)
    with pytest.raises(ValueError, match="fill_mode"):
        im.ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="is not a directory"):
        im.ImageDataGenerator().flow_from_directory(str(tmp_path / "missing"))
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(ValueError, match="bad.png is not an image file"):
        im.load_img(str(bad))


@needs_pillow
def test_flow_from_dataframe_gives_flow_from_directorys_batches(tmp_path):
    pd = pytest.importorskip("pandas")
    im = tf.keras.preprocessing.image
    write_class_folders(im, str(tmp_path))
    files = sorted((cls, f) for cls in ("cats", "dogs") for f in os.listdir(tmp_path / cls))
    frame = pd.DataFrame({"filename": [os.path.join(c, f) for c, f in files] + ["cats/missing.png", "notes.txt"],
                          "class": [c for c, _ in files] + ["cats", "dogs"],
                          "weight": np.arange(len(files) + 2.0), "size": np.arange(len(files) + 2) * 10})
    gen = im.ImageDataGenerator(rescale=1 / 255., horizontal_flip=True)
    with pytest.warns(UserWarning, match="Found 2 invalid image filename"):
        flow = gen.flow_from_dataframe(frame, str(tmp_path), **DIRECTORY_FLOW)
    # Same files, classes and seed as the recorded flow_from_directory case: Keras's batches.
    indices, classes, _ = RECORDED["image"]["directory_classes"]
    assert flow.class_indices == indices and flow.classes == classes["values"]
    _assert_same(jsonable([flow[0], flow[1]]), RECORDED["image"]["directory_batches"], "batches")

    with pytest.warns(UserWarning):
        raw = im.ImageDataGenerator().flow_from_dataframe(frame, str(tmp_path), y_col="size", weight_col="weight",
                                                          class_mode="raw", target_size=(2, 2), shuffle=False)
    x, y, w = raw[0]
    assert x.shape == (5, 2, 2, 3) and y.tolist() == [0, 10, 20, 30, 40] and w.tolist() == [0, 1, 2, 3, 4]
    multi = im.ImageDataGenerator().flow_from_dataframe(
        frame.iloc[:5], str(tmp_path), y_col=["size", "weight"], class_mode="multi_output", target_size=(2, 2),
        shuffle=False, batch_size=2)
    assert [t.tolist() for t in multi[1][1]] == [[20, 30], [2.0, 3.0]]
    picked = im.ImageDataGenerator().flow_from_dataframe(frame.iloc[:5], str(tmp_path), classes=["dogs"],
                                                         class_mode="sparse", target_size=(2, 2), shuffle=False)
    assert picked.filenames == [os.path.join(c, f) for c, f in files if c == "dogs"]
    assert picked[0][1].tolist() == [0.0] * len(picked.filenames)


@needs_pillow
def test_flow_from_dataframe_errors_name_the_column(tmp_path):
    pd = pytest.importorskip("pandas")
    gen = tf.keras.preprocessing.image.ImageDataGenerator()
    frame = pd.DataFrame({"filename": ["a.png", 3], "class": ["x", "y"]})
    with pytest.raises(TypeError, match="x_col=filename must be strings"):
        gen.flow_from_dataframe(frame, str(tmp_path))
    frame = pd.DataFrame({"filename": ["a.png", "b.png"], "class": ["x", 1]})
    with pytest.raises(TypeError, match="row 1 is 1"):
        gen.flow_from_dataframe(frame, str(tmp_path), validate_filenames=False)
    with pytest.raises(ValueError, match="there must be 2 classes. Found 3"):
        gen.flow_from_dataframe(pd.DataFrame({"filename": ["a", "b", "c"], "class": ["x", "y", "z"]}),
                                validate_filenames=False, class_mode="binary")
    with pytest.raises(TypeError, match="y_col must be a list"):
        gen.flow_from_dataframe(frame, class_mode="multi_output", validate_filenames=False)

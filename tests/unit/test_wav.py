"""tf.audio.decode_wav and encode_wav: the bytes TF 2.21 writes and the samples (or errors) it
reads (fixtures/record_tf_wav.py), files round-tripped through disk, and Python's own `wave`
module reading what we write and writing what we read."""
from __future__ import annotations

import json
import os
import wave

import numpy as np
import pytest

import tensorweave as tf
from fixtures.recorded import decode
from fixtures.wav_cases import DECODE, ENCODE, wav_bytes
from unit_helpers import run

_RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_wav.json")))
R = np.random.RandomState(5)


@pytest.mark.parametrize("name", sorted(_RECORDED["encoded"]))
def test_encoded_bytes_equal_tensorflows(name):
    audio, rate = ENCODE[name]
    assert run(tf.audio.encode_wav(audio, rate)).hex() == _RECORDED["encoded"][name]


@pytest.mark.parametrize("name", sorted(_RECORDED["decoded"]))
def test_decoding_matches_tensorflow(name):
    contents, channels, samples = DECODE[name]
    out = tf.audio.decode_wav(contents, desired_channels=channels, desired_samples=samples)
    want = _RECORDED["decoded"][name]
    if "error" in want:
        assert want["error"] == "InvalidArgumentError"
        with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeWav") as caught:
            run(out)
        assert want["message"] in str(caught.value)
        return
    audio, rate = run(out)
    assert audio.dtype == np.float32 and rate.dtype == np.int32 and rate == want["sample_rate"]
    np.testing.assert_array_equal(audio, decode(want["audio"]))


def test_round_trip_through_a_file(tmp_path):
    audio = R.uniform(-1, 1, size=(50, 2)).astype(np.float32)
    path = str(tmp_path / "clip.wav")
    written = tf.io.write_file(path, tf.audio.encode_wav(audio, 22050))
    decoded = tf.audio.decode_wav(tf.io.read_file(path))
    with tf.Session() as sess:
        sess.run(written)
        back, rate = sess.run(decoded)
    assert rate == 22050 and back.shape == (50, 2)
    np.testing.assert_allclose(back, audio, atol=0.5 / 32768)   # 16 bits: within half a step
    with wave.open(path) as f:   # what we write is a WAV file as Python's stdlib reads it
        assert (f.getnchannels(), f.getsampwidth(), f.getframerate(), f.getnframes()) == (2, 2, 22050, 50)
        samples = np.frombuffer(f.readframes(50), "<i2").reshape(50, 2)
    np.testing.assert_array_equal(samples / 32768.0, back)


def test_reads_what_pythons_wave_writes(tmp_path):
    samples = R.randint(-32768, 32768, size=(30, 3)).astype("<i2")
    path = str(tmp_path / "stdlib.wav")
    with wave.open(path, "wb") as f:
        f.setnchannels(3)
        f.setsampwidth(2)
        f.setframerate(8000)
        f.writeframes(samples.tobytes())
    audio, rate = run(tf.audio.decode_wav(tf.io.read_file(path), desired_channels=2, desired_samples=32))
    assert rate == 8000 and audio.shape == (32, 2)
    np.testing.assert_array_equal(audio[:30], samples[:, :2] / np.float32(32768))
    assert not audio[30:].any()


def test_static_shapes_and_outputs():
    out = tf.audio.decode_wav(tf.placeholder(tf.string, []), desired_channels=2, desired_samples=100)
    assert out.audio.shape.as_list() == [100, 2] and out.sample_rate.shape.ndims == 0
    assert out.audio.op.type == "DecodeWav" and out.audio.op.get_attr("desired_channels") == 2
    assert tf.audio.decode_wav(b"").audio.shape.as_list() == [None, None]
    encoded = tf.audio.encode_wav(tf.placeholder(tf.float32, [None, 1]), 16000)
    assert encoded.dtype == tf.string and encoded.op.type == "EncodeWav"
    nodes = {n.op: n for n in tf.get_default_graph().as_graph_def().node}
    assert sorted(nodes["DecodeWav"].attr) == ["desired_channels", "desired_samples"] and not nodes["EncodeWav"].attr


def test_bad_input_to_encode_names_the_op():
    with pytest.raises(ValueError, match="rank 2"):
        tf.audio.encode_wav(np.zeros(4, np.float32), 16000)
    audio, rate = tf.placeholder(tf.float32, [None, None]), tf.placeholder(tf.int32, [])
    encoded = tf.audio.encode_wav(audio, rate)
    with pytest.raises(tf.errors.InvalidArgumentError, match="EncodeWav.*num_frames must be positive"):
        run(encoded, {audio: np.zeros((0, 1)), rate: 16000})
    with pytest.raises(tf.errors.InvalidArgumentError, match="EncodeWav.*sample_rate must be in"):
        run(encoded, {audio: np.zeros((3, 1)), rate: 0})


def test_bad_desired_counts_name_the_op():
    with pytest.raises(ValueError, match="desired_samples must be -1.*-4 for 'DecodeWav'"):
        tf.audio.decode_wav(wav_bytes(np.zeros((3, 1))), desired_samples=-4)


def test_a_truncated_file_names_the_op():
    contents = tf.placeholder(tf.string, [])
    audio = tf.audio.decode_wav(contents).audio
    whole = wav_bytes(R.randint(-100, 100, size=(20, 1)))
    assert run(audio, {contents: whole}).shape == (20, 1)
    for cut in (3, 20, 43, len(whole) - 1):
        with pytest.raises(tf.errors.InvalidArgumentError, match="DecodeWav.*(too short|No data chunk)"):
            run(audio, {contents: whole[:cut]})

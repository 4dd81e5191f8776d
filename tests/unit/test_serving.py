"""tensorweave saved_model show/run against TF 2.21's saved_model_cli (recorded text and arrays,
fixtures/tf_serving/), and TF Serving's REST API (serving/rest_api.py) without sockets: predict
in both formats, classify, regress, b64 strings, status, metadata and every error's message and
status code, over TF-written SavedModels and one exported by tensorweave's SavedModelBuilder."""
from __future__ import annotations

import base64
import json
import os
import shutil

import numpy as np
import pytest

import tensorweave as tf
from tensorweave import cli
from tensorweave.ops.io.example_proto import Example
from tensorweave.serving import saved_model_cli
from tensorweave.serving.model_versions import ModelVersions
from tensorweave.serving.rest_api import RestApi
from tensorweave.serving.servable import Servable, contains_saved_model

from fixtures.tw_serving_models import export_mnist, softmax

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tf_serving")
MNIST = os.path.join(FIXTURES, "mnist", "1")
HALF_PLUS_TWO = os.path.join(FIXTURES, "half_plus_two", "1")
HALF_PLUS_TWO_EXAMPLES = os.path.join(FIXTURES, "half_plus_two_examples", "1")
with open(os.path.join(FIXTURES, "cli.json")) as _f:
    RECORDED = json.load(_f)
_RUN_INPUTS = np.load(os.path.join(FIXTURES, "run_inputs.npz"))
IMAGES = _RUN_INPUTS["images"]
def _split_ops(text: str):
    """The text without its ops lines, and the op sets they list (TF prints a set in hash order)."""
    lines, ops = [], []
    for line in text.splitlines():
        if " contains the following ops: " in line:
            head, listed = line.split(" contains the following ops: ")
            lines.append(head)
            ops.append(set(listed.strip("{}").replace("'", "").split(", ")))
        else:
            lines.append(line)
    return lines, ops


def _cli(capsys, args) -> tuple:
    rc = cli.main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


# -- saved_model show ------------------------------------------------------------------------------
@pytest.mark.parametrize("record", ["show_all_mnist", "show_all_half_plus_two", "show_all_half_plus_two_examples",
                                    "show_tag_sets", "show_signatures", "show_signature"])
def test_show_prints_what_saved_model_cli_prints(record, capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)   # the recorded commands name the model by a relative path
    rec = RECORDED[record]
    rc, out, _ = _cli(capsys, ["saved_model"] + rec["args"])
    assert rc == rec["returncode"] == 0
    assert _split_ops(out) == _split_ops(rec["stdout"])


@pytest.mark.parametrize("record", ["show_bad_tag_set", "run_bad_signature", "run_bad_input_key"])
def test_errors_are_saved_model_clis(record, capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    rec = RECORDED[record]
    rc, out, err = _cli(capsys, ["saved_model"] + rec["args"])
    assert rc == 1 and out == ""
    ours, theirs = err.strip().splitlines()[-1], rec["error"]
    if "Please choose from: " in theirs:   # the signatures, in the order of a protobuf map
        ours, ours_names = ours.split("Please choose from: ")
        theirs, their_names = theirs.split("Please choose from: ")
        assert set(ours_names.split(", ")) == set(their_names.split(", "))
    assert ours == theirs


def test_show_of_a_directory_without_a_saved_model_names_the_files(tmp_path, capsys):
    rc, _, err = _cli(capsys, ["saved_model", "show", "--dir", str(tmp_path)])
    assert rc == 1 and "SavedModel file does not exist at: " + str(tmp_path) in err
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff\xff")
    rc, _, err = _cli(capsys, ["saved_model", "show", "--dir", str(tmp_path)])
    assert rc == 1 and "Cannot parse file " + str(tmp_path / "saved_model.pb") in err


# -- saved_model run -------------------------------------------------------------------------------
@pytest.mark.parametrize("record", ["run_print", "run_exprs", "run_examples", "run_examples_v2"])
def test_run_prints_what_saved_model_cli_prints(record, capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    rec = RECORDED[record]
    rc, out, _ = _cli(capsys, ["saved_model"] + rec["args"])
    assert (rc, out) == (0, rec["stdout"])


def test_run_saves_the_outputs_tf_saved(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES)
    args = RECORDED["run_outdir"]["args"]
    outdir = str(tmp_path / "out")
    args = args[:args.index("--outdir") + 1] + [outdir]
    rc, out, _ = _cli(capsys, ["saved_model"] + args)
    assert rc == 0
    for key in ("classes", "probabilities"):
        ours, theirs = np.load(os.path.join(outdir, key + ".npy")), np.load(os.path.join("run_outputs", key + ".npy"))
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)
        assert f"Output {key} is saved to {os.path.join(outdir, key + '.npy')}" in out
    np.testing.assert_allclose(np.load(os.path.join(outdir, "probabilities.npy")), softmax(IMAGES), rtol=1e-5)
    rc, _, err = _cli(capsys, ["saved_model"] + args)   # the files exist now
    assert rc == 1 and "already exists. Add \"--overwrite\" to overwrite" in err
    assert _cli(capsys, ["saved_model"] + args + ["--overwrite"])[0] == 0


def test_tensorflow_loads_what_we_export(tmp_path, capsys, monkeypatch):
    """tw_mnist/1 is our export as recorded (record_tf_serving.py): TF's loader ran it and TF's
    saved_model_cli showed it. Ours shows the same, and both that export and a fresh one compute
    what TensorFlow computed from it."""
    with open(os.path.join(FIXTURES, "tw_mnist.json")) as f:
        rec = json.load(f)
    monkeypatch.chdir(FIXTURES)
    rc, recorded_show, _ = _cli(capsys, ["saved_model"] + rec["show_all"]["args"])
    assert rc == 0 and _split_ops(recorded_show) == _split_ops(rec["show_all"]["stdout"])
    fresh = str(tmp_path / "1")
    export_mnist(fresh)
    rc, fresh_show, _ = _cli(capsys, ["saved_model", "show", "--dir", fresh, "--all"])
    assert rc == 0 and _split_ops(fresh_show) == _split_ops(recorded_show)   # the same graph and signatures
    examples = []
    for row in IMAGES:
        ex = Example()
        ex.features.feature["x"].float_list.value.extend(row.tolist())
        examples.append(ex.SerializeToString())
    feeds = {"serving_default": {"images": IMAGES}, "classify": {"inputs": examples}, "regress": {"inputs": examples}}
    for export_dir in (os.path.join(FIXTURES, "tw_mnist", "1"), fresh):
        servable = Servable.load(export_dir)
        try:
            for key, feed in feeds.items():
                out = servable.run(key, feed)
                for name, want in rec["outputs"][key].items():
                    if out[name].dtype == object:
                        assert [[v.decode() for v in r] for r in out[name]] == want
                    else:
                        np.testing.assert_allclose(out[name], want, rtol=1e-5, atol=1e-7)
        finally:
            servable.retire()


def test_input_exprs_are_parsed_never_evaluated():
    ev = saved_model_cli.evaluate_expression
    np.testing.assert_array_equal(ev("np.ones((2,3))"), np.ones((2, 3)))
    np.testing.assert_array_equal(ev("np.full([2], 7, dtype=np.int32) * 2 - 1"), np.full([2], 13, np.int32))
    np.testing.assert_array_equal(ev("numpy.arange(6)"), np.arange(6))
    assert ev("[[1.0], [-2.5]]") == [[1.0], [-2.5]]
    assert ev("np.random.rand(4, 2)").shape == (4, 2)
    for bad, named in [('__import__("os").system("true")', '__import__("os").system("true")'),
                       ("np.load('x.npy')", "np.load('x.npy')"), ("np.ones(3).tofile('x')", "np.ones(3).tofile('x')"),
                       ("().__class__", "().__class__"), ("2 ** 1000000", "2 ** 1000000"),
                       ("[x for x in range(3)]", "[x for x in range(3)]")]:
        with pytest.raises(ValueError, match="is not allowed") as e:
            ev(bad)
        assert f'"{named}" is not allowed' in str(e.value)
    with pytest.raises(ValueError, match="not a valid expression"):
        ev("np.ones((2,")


def test_inputs_from_npy_and_npz_files_and_examples(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(3))
    np.savez(tmp_path / "b.npz", one=np.ones(2))
    np.savez(tmp_path / "c.npz", p=np.zeros(1), q=np.ones(1))
    feeds = saved_model_cli.load_inputs(f"a={tmp_path / 'a.npy'};b={tmp_path / 'b.npz'};c={tmp_path / 'c.npz'}[q]",
                                        "d=[1, 2]", 'e=[{"f": [1.5, 2.5], "g": ["s"]}, {"h": [3]}]')
    np.testing.assert_array_equal(feeds["a"], np.arange(3))
    np.testing.assert_array_equal(feeds["b"], np.ones(2))
    np.testing.assert_array_equal(feeds["c"], np.ones(1))
    assert feeds["d"] == [1, 2]
    first, second = (Example.FromString(s).features.feature for s in feeds["e"])
    assert list(first["f"].float_list.value) == [1.5, 2.5] and list(first["g"].bytes_list.value) == [b"s"]
    assert list(second["h"].int64_list.value) == [3]
    with pytest.raises(RuntimeError, match="contains more than one ndarrays"):
        saved_model_cli.load_inputs(f"c={tmp_path / 'c.npz'}")
    with pytest.raises(RuntimeError, match='does not contain variable with name "z"'):
        saved_model_cli.load_inputs(f"c={tmp_path / 'c.npz'}[z]")
    pickled = tmp_path / "p.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        saved_model_cli.load_inputs(f"p={pickled}")


# -- the REST API over a TF-written model ----------------------------------------------------------
@pytest.fixture
def model_dir(tmp_path):
    """A model base path holding half_plus_two as version 1."""
    shutil.copytree(HALF_PLUS_TWO, tmp_path / "1")
    return tmp_path


@pytest.fixture
def api(model_dir):
    models = ModelVersions("half_plus_two", str(model_dir))
    models.poll()
    yield RestApi(models)
    models.stop()


def _call(api, method, path, body=None):
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    status, text = api.handle(method, path, body.encode() if isinstance(body, str) else (body or b""))
    return status, json.loads(text)


def test_predict_rows_and_columns_as_tf_serving(api):
    path = "/v1/models/half_plus_two:predict"
    assert _call(api, "POST", path, {"instances": [[1.0], [2.0], [5.0]]}) == (200, {"predictions": [[2.5], [3.0],
                                                                                                     [4.5]]})
    assert _call(api, "POST", path, {"inputs": [[1.0], [3.0]]}) == (200, {"outputs": [[2.5], [3.5]]})
    assert _call(api, "POST", "/v1/models/half_plus_two/versions/1:predict",
                 {"signature_name": "serving_default", "instances": [{"x": [3.0]}]}) == (200, {"predictions": [[3.5]]})
    assert _call(api, "POST", path, {"inputs": {"x": [[7]]}}) == (200, {"outputs": [[5.5]]})   # ints are floats too


def test_strings_as_text_and_b64(api):
    path = "/v1/models/half_plus_two:predict"
    raw = b"\x00\xffbytes"
    status, out = _call(api, "POST", path, {"signature_name": "echo",
                                            "instances": ["ab", {"b64": base64.b64encode(raw).decode()}]})
    # two outputs: an object per instance; text stays text, bytes that are not UTF-8 come back as b64
    assert status == 200 and out == {"predictions": [{"length": 2, "s_out": "ab"},
                                                     {"length": len(raw), "s_out": {"b64": base64.b64encode(
                                                         raw).decode()}}]}
    status, out = _call(api, "POST", path, {"signature_name": "echo", "inputs": {"s": ["héllo"]}})
    assert status == 200 and out == {"outputs": {"length": [6], "s_out": ["héllo"]}}


def test_status_and_metadata(api):
    assert _call(api, "GET", "/v1/models/half_plus_two") == (200, {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]})
    assert _call(api, "GET", "/v1/models/half_plus_two/versions/1")[0] == 200
    status, meta = _call(api, "GET", "/v1/models/half_plus_two/metadata")
    assert status == 200 and meta["model_spec"] == {"name": "half_plus_two", "signature_name": "", "version": "1"}
    sigs = meta["metadata"]["signature_def"]["signature_def"]
    assert sorted(sigs) == ["echo", "serving_default"]
    assert sigs["serving_default"]["method_name"] == tf.saved_model.PREDICT_METHOD_NAME
    assert sigs["serving_default"]["inputs"]["x"] == {
        "dtype": "DT_FLOAT", "name": "x:0",
        "tensor_shape": {"dim": [{"size": "-1", "name": ""}, {"size": "1", "name": ""}], "unknown_rank": False}}


@pytest.mark.parametrize("method, path, body, status, message", [
    ("POST", "/v1/models/half_plus_two:predict", "", 400, "JSON Parse error: The document is empty"),
    ("POST", "/v1/models/half_plus_two:predict", "instances = [1, 2]", 400, "JSON Parse error: "),
    ("POST", "/v1/models/half_plus_two:predict", "[1]", 400, "JSON Value: [1] Is not object"),
    ("POST", "/v1/models/nope:predict", {"instances": [1]}, 404, "Servable not found for request: Latest(nope)"),
    ("POST", "/v1/models/half_plus_two/versions/9:predict", {"instances": [1]}, 404,
     "Servable not found for request: Specific(half_plus_two, 9)"),
    ("GET", "/v1/models/nope", None, 404, "Could not find any versions of model nope"),
    ("GET", "/v1/models/half_plus_two/versions/9", None, 404, "Could not find version 9 of model half_plus_two"),
    ("POST", "/v1/models/half_plus_two:predict", {"signature_name": "nope", "instances": [[1.0]]}, 400,
     'Serving signature name: "nope" not found in signature def'),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [{"z": [1.0]}]}, 400,
     "Failed to process element: 0 key: z of 'instances' list. Error: INVALID_ARGUMENT: JSON object: does not have "
     "named input: z"),
    ("POST", "/v1/models/half_plus_two:predict", {"inputs": {"z": [[1.0]]}}, 400,
     "Missing named input: x in 'inputs' object."),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [["a"]]}, 400,
     'Failed to process element: 0 of \'instances\' list. Error: INVALID_ARGUMENT: JSON Value: "a" Type: String is '
     "not of expected type: float"),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [[1.0], [1.0, 2.0]]}, 400,
     "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: Expecting tensor size: 1 but got: 2"),
    ("POST", "/v1/models/half_plus_two:predict", {"inputs": [[1.0, 2.0]]}, 400,
     "input 'x' has shape [1,2], which is not compatible with the signature's [-1,1] (x:0)"),
    ("POST", "/v1/models/half_plus_two:predict", {"inputs": [[1.0], [2.0, 3.0]]}, 400,
     "Encountered list at unexpected size: 2 at level: 1 expected size: 1"),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": [[1.0]], "inputs": [[1.0]]}, 400,
     "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist"),
    ("POST", "/v1/models/half_plus_two:predict", {"signature_name": "x"}, 400, "Serving signature name"),
    ("POST", "/v1/models/half_plus_two:predict", {}, 400, "Missing 'inputs' or 'instances' key"),
    ("POST", "/v1/models/half_plus_two:predict", {"instances": []}, 400, "No values in 'instances' array"),
    ("POST", "/v1/models/half_plus_two:predict", {"inputs": {"b64": "!!"}}, 400, ""),
    ("POST", "/v1/models/half_plus_two:predict", '{"inputs": [[1e39]]}', 400,
     "Cannot convert JSON value: 1e+39 to float without loss of precision."),
    ("POST", "/v1/models/half_plus_two:predict", '{"inputs": [[' + "9" * 400 + ']]}', 400,
     "to float without loss of precision."),
    ("POST", "/v1/models/half_plus_two:predict", b'{"inputs": "\xff"}', 400, "JSON Parse error"),
    ("POST", "/v1/models/half_plus_two:predict", "[" * 100000, 400, "JSON Parse error"),
    ("POST", "/v1/models/half_plus_two:predict", {"signature_name": "echo", "inputs": [{"b64": "!!"}]}, 400,
     "Unable to base64 decode"),
    ("POST", "/v1/models/half_plus_two:regress", {"examples": [{"x": 1.0}]}, 400,
     "Expected regression signature method_name to be tensorflow/serving/regress. Was: tensorflow/serving/predict"),
    ("GET", "/v1/models", None, 400, "Missing model name in request."),
    ("GET", "/v1/foo", None, 400, "Malformed request: GET /v1/foo"),
    ("GET", "/v1/models/half_plus_two:predict", None, 400, "Malformed request: GET /v1/models/half_plus_two:predict"),
])
def test_errors_are_tf_servings(api, method, path, body, status, message):
    got_status, out = _call(api, method, path, body)
    assert got_status == status and list(out) == ["error"]
    assert message in out["error"]


def test_classify_and_regress_of_a_tf_model_as_tf_serving(tmp_path):
    """TF Serving's own expectations for half_plus_two (http_rest_api_handler_test.cc): regress
    {"x": 80.0} -> 42, classify {"x": 20.0} -> [["", 12]]; TF's ParseExample and ParseExampleV2."""
    shutil.copytree(HALF_PLUS_TWO_EXAMPLES, tmp_path / "123")
    models = ModelVersions("half_plus_two", str(tmp_path))
    models.poll()
    api = RestApi(models)
    try:
        assert _call(api, "POST", "/v1/models/half_plus_two:regress",
                     {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]}) == (200, {"results": [42.0]})
        assert _call(api, "POST", "/v1/models/half_plus_two/versions/123:classify",
                     {"signature_name": "classify_x_to_y", "examples": [{"x": 20.0}, {}]}) == (
            200, {"results": [[["", 12.0]], [["", 2.0]]]})   # an Example without x: the default, 0
        status, out = _call(api, "POST", "/v1/models/half_plus_two:regress",
                            {"signature_name": "regress_x_to_y", "examples": [{"x": 80}]})
        assert status == 400 and "Data types don't match" in out["error"]   # 80 is an int64 feature
        assert _call(api, "POST", "/v1/models/half_plus_two:classify",
                     {"signature_name": "regress_x_to_y", "examples": [{"x": 1.0}]}) == (400, {"error": (
                         "Expected classification signature method_name to be tensorflow/serving/classify. Was: "
                         "tensorflow/serving/regress")})
    finally:
        models.stop()


# -- a model exported by tensorweave's SavedModelBuilder: classify, regress, *_bytes ----------------
@pytest.fixture(scope="module")
def mnist_api(tmp_path_factory):
    base = tmp_path_factory.mktemp("mnist")
    export_mnist(str(base / "7"))
    models = ModelVersions("mnist", str(base))
    models.poll()
    yield RestApi(models)
    models.stop()


def test_mnist_predict_answers_numpy(mnist_api):
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:predict", {"instances": IMAGES.tolist()})
    assert status == 200 and len(out["predictions"]) == 2
    expected = softmax(IMAGES)
    for row, want in zip(out["predictions"], expected):
        assert sorted(row) == ["classes", "probabilities"]
        assert row["classes"] == int(np.argmax(want))
        np.testing.assert_allclose(row["probabilities"], want, rtol=1e-5)
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:predict", {"inputs": {"images": IMAGES.tolist()}})
    assert out["outputs"]["classes"] == np.argmax(expected, 1).tolist()
    np.testing.assert_allclose(out["outputs"]["probabilities"], expected, rtol=1e-5)


def test_floats_are_written_in_their_shortest_float32_text(mnist_api):
    _, text = mnist_api.handle("POST", "/v1/models/mnist:predict", json.dumps({"instances": IMAGES[:1].tolist()}))
    numbers = text.split('"probabilities":[')[1].split("]")[0].split(",")
    for t in numbers:
        v = np.float32(t)
        assert t in ("%g" % v, "%.9g" % v) and np.float32(float(t)) == v


def _examples(images):
    return [{"x": row.tolist()} for row in images]


def test_classify_and_regress_from_json_examples(mnist_api):
    expected = softmax(IMAGES)
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:classify",
                        {"signature_name": "classify", "examples": _examples(IMAGES)})
    assert status == 200 and len(out["results"]) == 2
    for result, want in zip(out["results"], expected):
        assert [label for label, _ in result] == [str(i) for i in range(10)]
        np.testing.assert_allclose([score for _, score in result], want, rtol=1e-5)
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:classify",
                        {"signature_name": "classify_scores", "examples": _examples(IMAGES[:1])})
    assert [label for label, _ in out["results"][0]] == [""] * 10
    # the context's features go into every example
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:regress",
                        {"signature_name": "regress", "context": {"x": IMAGES[1].tolist()}, "examples": [{}, {}]})
    assert status == 200
    np.testing.assert_allclose(out["results"], [expected[1].max()] * 2, rtol=1e-5)
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:classify",
                        {"signature_name": "classify", "examples": [{"x": [1] * 784}]})
    assert status == 400 and "ParseExample" in out["error"] and "Data types don't match" in out["error"], out
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:classify", {"signature_name": "classify"})
    assert status == 400 and "When method is classify, key 'examples' is expected and was not found" in out["error"]
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:classify",
                        {"signature_name": "classify", "examples": [{"x": [1.0, "a"]}]})
    assert status == 400 and out["error"] == "Unexpected element type in feature: x expecting type: float"


def test_outputs_named_bytes_are_base64(mnist_api):
    data = b"\x00\xff\xfe"
    status, out = _call(mnist_api, "POST", "/v1/models/mnist:predict",
                        {"signature_name": "raw", "instances": [{"inputs": {"b64": base64.b64encode(data).decode()}}]})
    assert status == 200
    row = out["predictions"][0]
    assert base64.b64decode(row["echo_bytes"]["b64"]) == data
    assert row["echo"] == {"b64": base64.b64encode(data).decode()}   # not UTF-8: JSON holds it only as b64


# -- versions --------------------------------------------------------------------------------------
def test_the_newest_complete_version_is_served(model_dir):
    models = ModelVersions("half_plus_two", str(model_dir))
    api = RestApi(models)
    try:
        models.poll()
        partial = model_dir / "2"
        (partial / "variables").mkdir(parents=True)
        shutil.copy(os.path.join(HALF_PLUS_TWO, "saved_model.pb"), partial)
        shutil.copy(os.path.join(HALF_PLUS_TWO, "variables", "variables.data-00000-of-00001"), partial / "variables")
        assert not contains_saved_model(str(partial))   # no index yet: still being copied
        models.poll()
        assert [s["version"] for s in _call(api, "GET", "/v1/models/half_plus_two")[1]["model_version_status"]] == ["1"]
        shutil.copy(os.path.join(HALF_PLUS_TWO, "variables", "variables.index"), partial / "variables")
        models.poll()
        assert _call(api, "GET", "/v1/models/half_plus_two")[1]["model_version_status"] == [
            {"version": "2", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}},
            {"version": "1", "state": "END", "status": {"error_code": "OK", "error_message": ""}}]
        assert _call(api, "POST", "/v1/models/half_plus_two/versions/2:predict", {"instances": [[2.0]]}) == (
            200, {"predictions": [[3.0]]})
        assert _call(api, "POST", "/v1/models/half_plus_two/versions/1:predict", {"instances": [[2.0]]})[0] == 404
        broken = model_dir / "3"
        broken.mkdir()
        (broken / "saved_model.pb").write_bytes(b"\xff\xff")
        models.poll()   # a version that fails to load is reported; the served one stays
        states = {s["version"]: s for s in _call(api, "GET", "/v1/models/half_plus_two")[1]["model_version_status"]}
        assert states["3"]["state"] == "END" and "Cannot parse file" in states["3"]["status"]["error_message"]
        assert _call(api, "POST", "/v1/models/half_plus_two:predict", {"instances": [[2.0]]})[0] == 200
        shutil.rmtree(broken)
        shutil.rmtree(partial)   # the served version's directory gone: the newest left is served
        models.poll()
        states = {s["version"]: s["state"] for s in _call(api, "GET", "/v1/models/half_plus_two")[1][
            "model_version_status"]}
        assert states == {"1": "AVAILABLE", "2": "END", "3": "END"}
        assert _call(api, "POST", "/v1/models/half_plus_two/versions/1:predict", {"instances": [[2.0]]}) == (
            200, {"predictions": [[3.0]]})
    finally:
        models.stop()

"""tf.profiler.profile: the GraphNodeProto trees (float operations, parameters, which nodes are
shown and totalled) of an MLP and a CNN equal TensorFlow 2.21's (fixtures/record_tf_profiles.py),
the printed report, and ProfileOptionBuilder's option sets."""
from __future__ import annotations

import json
import os

import pytest

import tensorweave as tf
from tensorweave.framework import errors

import profile_models

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_profiles.json")))
Builder = tf.profiler.ProfileOptionBuilder
OPTIONS = {
    "float_operation": lambda: Builder.float_operation(),
    "trainable_variables_parameter": lambda: Builder.trainable_variables_parameter(),
    "narrowed": lambda: (Builder(Builder.float_operation()).with_node_names(hide_name_regexes=[".*MatMul"])
                         .with_min_float_operations(100).account_displayed_op_only(False).order_by("name")
                         .with_empty_output().build()),
}
CASES = [(m, o) for m in ("mlp", "cnn") for o in OPTIONS]


def _profile(model: str, options):
    g = tf.Graph()
    with g.as_default():
        getattr(profile_models, model)(tf)
        return tf.profiler.profile(g, options=options)


def _clear_definition_counts(node) -> None:
    node.ClearField("total_definition_count")
    for child in node.children:
        _clear_definition_counts(child)


@pytest.mark.parametrize("model,option_name", CASES, ids=["/".join(c) for c in CASES])
def test_profile_equals_tensorflows(model, option_name, capsys):
    got = _profile(model, OPTIONS[option_name]())
    want = tf.profiler.GraphNodeProto.FromString(bytes.fromhex(RECORDED[f"{model}/{option_name}"]))
    assert (got.total_float_ops, got.total_parameters) == (want.total_float_ops, want.total_parameters)
    if option_name == "narrowed":
        # accounting hidden nodes too, total_definition_count counts every op of the graph, and
        # TF 2.21's resource variables have ops ours have not (IsInitialized/VarIsInitializedOp)
        for tree in (got, want):
            _clear_definition_counts(tree)
    assert got == want, f"ours:\n{got}\nTensorFlow's:\n{want}"
    printed = capsys.readouterr().out
    assert (printed == "") == (option_name == "narrowed")


def test_totals_by_hand_and_report():
    builder = Builder(Builder.float_operation()).with_stdout_output()
    assert builder.build()["output"] == "stdout" and Builder.float_operation()["select"] == ["float_ops"]
    mlp = _profile("mlp", Builder(Builder.float_operation()).with_empty_output().build())
    # MatMul 2*m*n*k, BiasAdd and Sub/Square/Mean one per element, Softmax five per element
    assert mlp.total_float_ops == 2 * 8 * 20 * 16 + 2 * 8 * 16 * 10 + 8 * 16 + 8 * 10 + 5 * 80 + 80 + 80 + 80
    assert _profile("mlp", None).total_parameters == 20 * 16 + 16 + 16 * 10 + 10   # the default options
    cnn = {c.name: c.float_ops for c in _profile("cnn", Builder(Builder.float_operation()).with_empty_output()
                                                 .build()).children}
    assert cnn["conv/Conv2D"] == 4 * 6 * 6 * 8 * (3 * 3 * 3) * 2 and "unknown_matmul" not in cnn


def test_report_to_a_file_and_bad_arguments(tmp_path):
    out = tmp_path / "report.txt"
    _profile("mlp", Builder(Builder.trainable_variables_parameter()).with_file_output(str(out)).build())
    assert out.read_text().splitlines()[:4] == ["node name | # parameters", "_TFProfRoot (--/506 params)",
                                                "  layer0 (--/336 params)", "    layer0/bias (16, 16/16 params)"]
    with pytest.raises(errors.InvalidArgumentError, match="profile cmd 'code'"):
        tf.profiler.profile(tf.Graph(), cmd="code")


def test_op_log_adds_types_and_float_ops():
    g = tf.Graph()
    with g.as_default():
        tf.identity(tf.constant([1.0, 2.0]), name="custom")
    op_log = tf.profiler.OpLogProto()
    op_log.log_entries.add(name="custom", float_ops=7, types=["my_type"])
    options = Builder(Builder.float_operation()).with_accounted_types(["my_type"]).with_empty_output().build()
    result = tf.profiler.profile(g, op_log=op_log, options=options)
    assert result.total_float_ops == 7 and [c.name for c in result.children] == ["custom"]


def test_write_op_log_records_float_ops_and_trainable_variables(tmp_path):
    g = tf.Graph()
    with g.as_default():
        profile_models.mlp(tf)
    given = tf.profiler.OpLogProto()
    given.log_entries.add(name="layer0/MatMul", float_ops=1, types=["mine"])   # a non-zero given value wins
    tf.profiler.write_op_log(g, str(tmp_path), op_log=given)
    log = tf.profiler.OpLogProto.FromString((tmp_path / "tfprof_log").read_bytes())
    entries = {e.name: e for e in log.log_entries}
    assert entries["layer0/MatMul"].float_ops == 1 and list(entries["layer0/MatMul"].types) == ["mine"]
    assert entries["layer1/MatMul"].float_ops == 2 * 8 * 16 * 10 and entries["probs"].float_ops == 5 * 80
    assert list(entries["layer0/kernel"].types) == ["_trainable_variables"]
    assert {n for n, e in entries.items() if "_trainable_variables" in e.types} == {
        "layer0/kernel", "layer0/bias", "layer1/kernel", "layer1/bias"}

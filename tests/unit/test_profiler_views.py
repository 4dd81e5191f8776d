"""tf.profiler's graph and op views, tf.profiler.Profiler and the advisor against TensorFlow 2.21
(fixtures/record_tf_profiles.py): the GraphNodeProto of profile(cmd='graph') and the
MultiGraphNodeProto chain of profile(cmd='op') equal TF's for the same graphs and options, as do
the op view's printed report, the views of a Profiler with a step added (minus the step's run
times, which tensorweave's RunMetadata does not carry) and the AdviceProto of advise()."""
from __future__ import annotations

import json
import os

import pytest

import profile_models
import tensorweave as tf
from tensorweave.framework import errors

RECORDED = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_profiles.json")))
Builder = tf.profiler.ProfileOptionBuilder
OPTIONS = {
    "float_operation": lambda: Builder.float_operation(),
    "trainable_variables_parameter": lambda: Builder.trainable_variables_parameter(),
    "narrowed": lambda: (Builder(Builder.float_operation()).with_node_names(hide_name_regexes=[".*MatMul"])
                         .with_min_float_operations(100).account_displayed_op_only(False).order_by("name")
                         .with_empty_output().build()),
}
CASES = [(cmd, m, o) for cmd in ("graph", "op") for m in ("mlp", "cnn", "batch_norm") for o in OPTIONS]


def _graph(model: str):
    g = tf.Graph()
    with g.as_default():
        getattr(profile_models, model)(tf)
    return g


def _without_incidental_ops(node) -> None:
    """Drops what depends on how each library spells a graph, not on the profiler: the
    definition counts of accounted-but-hidden ops, and the op view's members of neither float
    operations nor parameters (reads of variables, shape constants: named differently by TF)."""
    if hasattr(node, "total_definition_count"):
        node.ClearField("total_definition_count")
    if hasattr(node, "graph_nodes"):
        kept = [g for g in node.graph_nodes if g.float_ops or g.parameters]
        del node.graph_nodes[:]
        node.graph_nodes.extend(kept)
        for g in node.graph_nodes:
            g.ClearField("total_definition_count")
    for child in node.children:
        _without_incidental_ops(child)


@pytest.mark.parametrize("cmd,model,option_name", CASES, ids=[":".join(c) for c in CASES])
def test_view_equals_tensorflows(cmd, model, option_name, capsys):
    options = OPTIONS[option_name]()
    got = tf.profiler.profile(_graph(model), cmd=cmd, options=options)
    proto = tf.profiler.MultiGraphNodeProto if cmd == "op" else tf.profiler.GraphNodeProto
    want = proto.FromString(bytes.fromhex(RECORDED[f"{cmd}:{model}/{option_name}"]))
    if option_name == "narrowed":   # every op type accounted: TF's graphs spell incidental ops their own way
        for tree in (got, want):
            _without_incidental_ops(tree)
    assert got == want, f"ours:\n{got}\nTensorFlow's:\n{want}"
    assert (capsys.readouterr().out == "") == (option_name == "narrowed")


def test_op_view_report_equals_tensorflows(capsys):
    profiler = tf.profiler.Profiler(_graph("batch_norm"))
    profiler.profile_operations(Builder(Builder.float_operation()).with_min_float_operations(1).build())
    printed = capsys.readouterr().out
    recorded = RECORDED["Profiler/op_report"]
    # TF prints its options and a legend of the view around the report itself
    profile = recorded[recorded.index("node name |"):recorded.index("\n\n======================End")] + "\n"
    assert printed == profile


def test_op_view_chain_by_hand():
    result = tf.profiler.profile(_graph("mlp"), cmd="op", options=Builder(Builder.float_operation())
                                 .with_empty_output().build())
    chain, node = [], result
    while node.children:
        node = node.children[0]
        chain.append((node.name, node.float_ops, node.total_float_ops, [g.name for g in node.graph_nodes]))
    assert chain[0] == ("MatMul", 2 * 8 * 20 * 16 + 2 * 8 * 16 * 10, result.total_float_ops,
                        ["layer0/MatMul", "layer1/MatMul"])
    assert [c[0] for c in chain] == ["MatMul", "Softmax", "BiasAdd", "Mean", "Square", "Sub"]
    for (_, own, total, _), (_, _, next_total, _) in zip(chain, chain[1:] + [("", 0, 0, [])]):
        assert total == own + next_total


def test_profiler_views_with_a_step():
    g = _graph("batch_norm")
    profiler = tf.profiler.Profiler(g)
    with g.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        run_meta = tf.RunMetadata()
        sess.run("loss:0", options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=run_meta)
    profiler.add_step(1, run_meta)
    options = Builder(Builder.trainable_variables_parameter()).with_step(1).with_empty_output().build()

    def params_tree(node):
        return (node.name, node.parameters, node.total_parameters, [params_tree(c) for c in node.children])
    for view, key in ((profiler.profile_name_scope, "scope_step"), (profiler.profile_graph, "graph_step")):
        want = tf.profiler.GraphNodeProto.FromString(bytes.fromhex(RECORDED[f"Profiler/{key}"]))
        assert params_tree(view(options)) == params_tree(want)
    with pytest.raises(errors.InvalidArgumentError, match="Python stack"):
        profiler.profile_python(options)


def test_advice_equals_tensorflows(capsys):
    g = _graph("batch_norm")
    advice = tf.profiler.advise(g)
    assert advice == tf.profiler.AdviceProto.FromString(bytes.fromhex(RECORDED["advise/default"]))
    assert capsys.readouterr().out == RECORDED["advise/printed"]
    chosen = tf.profiler.Profiler(g).advise({"OperationChecker": {}, "JobChecker": {}})
    assert chosen == tf.profiler.AdviceProto.FromString(bytes.fromhex(RECORDED["Profiler/advise_no_step"]))
    assert list(tf.profiler.advise(_graph("mlp")).checkers["OperationChecker"].reports) == []

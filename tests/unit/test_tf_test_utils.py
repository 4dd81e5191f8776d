"""tf.test's helpers: Benchmark (its report file compared with the one TF 2.21 writes,
fixtures/tf_benchmark_report.pb), StubOutForTesting, assert_equal_graph_def, benchmark_config,
disable_with_predicate, the build queries; and tf.resource_loader on real files."""
from __future__ import annotations

import os
import platform
import unittest

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.tf_protos import BenchmarkEntries

from fixtures.benchmark_report_case import BENCHMARK_REPORT, REPORT_FILE

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


class MatMulBenchmark(tf.test.Benchmark):
    def benchmark_matmul(self):
        self.report_benchmark(**BENCHMARK_REPORT)

    def benchmark_add(self, sess, fetch, feed):
        return self.run_op_benchmark(sess, fetch, feed_dict=feed, burn_iters=1, min_iters=3, mbs=8,
                                     store_trace=True, extras={"note": "small"})


def _entries(path: str):
    with open(path, "rb") as f:
        return BenchmarkEntries.FromString(f.read())


def test_report_benchmark_writes_tf_s_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REPORT_FILE_PREFIX", str(tmp_path / "report_"))
    MatMulBenchmark().benchmark_matmul()
    ours = _entries(str(tmp_path / ("report_" + REPORT_FILE)))
    assert ours == _entries(os.path.join(FIXTURES, "tf_benchmark_report.pb"))
    entry = ours.entry[0]
    assert entry.name == "MatMulBenchmark.matmul/large" and entry.iters == 20
    assert entry.extras["batch"].double_value == 32 and entry.extras["device"].string_value == "cpu"
    with pytest.raises(IOError, match="File already exists"):   # as TF: one report per name
        MatMulBenchmark().benchmark_matmul()


def test_report_benchmark_prints_without_a_prefix(monkeypatch, capsys):
    monkeypatch.delenv("TEST_REPORT_FILE_PREFIX", raising=False)
    MatMulBenchmark().benchmark_matmul()
    out = capsys.readouterr().out
    assert 'name: "MatMulBenchmark.matmul/large"' in out and "wall_time: 0.125" in out


def test_report_benchmark_checks_its_arguments():
    with pytest.raises(TypeError, match="extras must be a dict"):
        MatMulBenchmark().report_benchmark(extras=[1], name="x")
    with pytest.raises(TypeError, match="metric must has a 'value' field"):
        MatMulBenchmark().report_benchmark(metrics=[{"name": "a"}], name="x")


def test_run_op_benchmark_reports_the_median(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REPORT_FILE_PREFIX", str(tmp_path / "r_"))
    with tf.Graph().as_default(), tf.Session() as sess:
        p = tf.placeholder(tf.float32, [3])
        values = MatMulBenchmark().benchmark_add(sess, p * 2.0, {p: np.ones(3)})
    assert values["name"] is None and values["iters"] == 3   # as TF: the name it was given
    assert values["wall_time"] > 0 and values["throughput"] == pytest.approx(8 / values["wall_time"])
    assert '"traceEvents"' in values["extras"]["full_trace_chrome_format"]
    assert values["extras"]["wall_time_mean"] > 0
    entry = _entries(str(tmp_path / "r_MatMulBenchmark.benchmark_add")).entry[0]
    assert entry.iters == 3 and entry.wall_time == pytest.approx(values["wall_time"])
    assert entry.extras["note"].string_value == "small"
    assert "full_trace_chrome_format" not in entry.extras and "wall_time_mean" not in entry.extras


def test_stub_out_for_testing_restores_everything():
    class Base:
        def greet(self):
            return "base"

        @staticmethod
        def tag():
            return "static"

    class Child(Base):
        pass

    child = Child()
    with tf.test.StubOutForTesting() as stubs:
        stubs.Set(os.path, "basename", lambda p: "stubbed")
        stubs.SmartSet(child, "greet", lambda self: "stub")   # an instance: its class is stubbed
        stubs.SmartSet(Base, "tag", staticmethod(lambda: "stub static"))
        assert os.path.basename("/a/b") == "stubbed"
        assert child.greet() == "stub" and Child().greet() == "stub" and Base().greet() == "base"
        assert Base.tag() == "stub static"
    assert os.path.basename("/a/b") == "b"
    assert child.greet() == "base" and "greet" not in vars(Child)
    assert Base.tag() == "static" and isinstance(vars(Base)["tag"], staticmethod)
    with pytest.raises(AttributeError, match="not found"):
        tf.test.StubOutForTesting().SmartSet(child, "missing", 1)


def _graph_def(value, extra=False, device=""):
    with tf.Graph().as_default() as g:
        with tf.device(device):
            a = tf.constant(value, name="a")
        b = tf.identity(a, name="b")
        if extra:
            tf.identity(b, name="c")
    return g.as_graph_def()


def test_assert_equal_graph_def():
    tf.test.assert_equal_graph_def(_graph_def(1), _graph_def(1))
    reordered = tf.GraphDef()
    reordered.node.extend(reversed(_graph_def(1).node))   # order does not matter
    tf.test.assert_equal_graph_def(reordered, _graph_def(1))
    with pytest.raises(AssertionError, match="Node named 'a' has attr 'value'"):
        tf.test.assert_equal_graph_def(_graph_def(1), _graph_def(2))
    with pytest.raises(AssertionError, match="Found unexpected node 'c = Identity\\(b\\)'"):
        tf.test.assert_equal_graph_def(_graph_def(1, extra=True), _graph_def(1))
    with pytest.raises(AssertionError, match="Did not find expected node 'c"):
        tf.test.assert_equal_graph_def(_graph_def(1), _graph_def(1, extra=True))
    with pytest.raises(AssertionError, match="has device '/device:CPU:0'"):
        tf.test.assert_equal_graph_def(_graph_def(1, device="/device:CPU:0"), _graph_def(1))
    with pytest.raises(TypeError, match="Expected tf.GraphDef for actual, got str"):
        tf.test.assert_equal_graph_def("graph", _graph_def(1))


def test_assert_equal_graph_def_ignores_saver_temp_names():
    def saver_graph_def():
        with tf.Graph().as_default() as g:
            tf.Variable(1.0, name="v")
            tf.train.Saver()
        return g.as_graph_def()
    first, second = saver_graph_def(), saver_graph_def()
    temps = [n for n in first.node if n.op == "Const" and b"_temp_" in b"".join(n.attr["value"].tensor.string_val)]
    if temps:   # a V2 Saver's graph holds a random "_temp_<uuid>/part" suffix
        with pytest.raises(AssertionError):
            tf.test.assert_equal_graph_def(first, second)
    tf.test.assert_equal_graph_def(first, second, checkpoint_v2=True)


def test_disable_with_predicate_and_eager_op_decorator():
    ran = []

    @tf.test.with_eager_op_as_function
    class Case(unittest.TestCase):
        @tf.test.disable_with_predicate(lambda: True, "never here")
        def test_skipped(self):
            ran.append("skipped")

        @tf.test.disable_with_predicate(lambda: False, "runs")
        def test_runs(self):
            ran.append("runs")

    result = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(Case))
    assert ran == ["runs"] and [m for _, m in result.skipped] == ["never here"]
    assert tf.test.with_eager_op_as_function(only_as_function=True)(Case) is Case


def test_build_queries_and_paths():
    assert not tf.test.is_built_with_gpu_support() and not tf.test.is_built_with_rocm()
    assert not tf.test.is_built_with_xla()
    machine = platform.machine().lower()
    assert tf.test.is_cpu_target_available("x86") == (machine in ("x86_64", "amd64", "i386", "i686", "x86"))
    assert tf.test.is_cpu_target_available("aarch64") == (machine in ("aarch64", "arm64"))
    config = tf.test.benchmark_config()
    assert config.graph_options.rewrite_options["dependency_optimization"] == 2   # RewriterConfig.OFF
    assert os.path.isfile(tf.test.test_src_dir_path("ops/registry.py"))


def test_resource_loader_finds_files_beside_the_caller(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    assert tf.resource_loader.get_data_files_path() == here
    assert tf.resource_loader.get_path_to_datafile("fixtures/tf1_names.json") == \
        os.path.join(here, "fixtures/tf1_names.json")
    assert tf.resource_loader.load_resource("fixtures/benchmark_report_case.py").startswith(b'"""The report')
    with pytest.raises(OSError):
        tf.resource_loader.load_resource("fixtures/no_such_file")
    assert tf.resource_loader.readahead_file_path("/x/y", "256M") == "/x/y"
    assert tf.resource_loader.get_root_dir_with_all_resources() == here   # not under a .runfiles directory


def test_resource_root_under_bazel_runfiles(tmp_path):
    script_dir = tmp_path / "main.runfiles" / "org_project" / "tools"
    script_dir.mkdir(parents=True)
    script = script_dir / "tool.py"
    script.write_text("import tensorweave as tf\nROOT = tf.resource_loader.get_root_dir_with_all_resources()\n")
    scope: dict = {}
    exec(compile(script.read_text(), str(script), "exec"), scope)   # our own file, run as that script
    assert scope["ROOT"] == str(tmp_path / "main.runfiles" / "org_project")

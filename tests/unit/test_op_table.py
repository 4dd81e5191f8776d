"""The op library loads on demand: the registry imports an op type's modules the first time
anything asks about it (tensorweave/ops/registry.py, from the table tools/generate_op_table.py
writes), so a process imports only the op modules its graphs use, and every program behaves as
if the whole library were loaded. The programs below run in fresh interpreters, where nothing
else has loaded a module for them."""
from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import textwrap

import pytest

import tensorweave as tf
from repo_tools import ROOT
from tensorweave.ops import registry
from tensorweave.ops._op_table import OP_MODULES


def _run(code: str) -> list:
    """The lines `code` prints in a fresh interpreter; fails with its stderr if it fails."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")[:-1]


def test_the_table_is_current():
    out = subprocess.run([sys.executable, "tools/generate_op_table.py", "--check"], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr + "run python tools/generate_op_table.py"


def test_the_table_names_every_registered_op_and_gradient_module():
    registry.load_all()
    assert set(registry.OP_DEFS) == set(OP_MODULES)
    assert OP_MODULES["Relu"] == ("tensorweave.ops.nn.activations",)
    assert OP_MODULES["Pow"] == ("tensorweave.ops.gradients.math_grad", "tensorweave.ops.math.binary")


def test_a_program_loads_the_modules_of_its_ops_and_runs_as_with_all_of_them():
    loaded, values = _run("""
        import sys
        import tensorweave as tf
        x = tf.constant([[1.0, -2.0], [3.0, 4.0]])
        y = tf.reduce_sum(tf.nn.relu(x) ** 2.0 + x[0, 1])      # Tensor's operators, __getitem__
        packed = tf.convert_to_tensor([x[0, 0], 2.0])             # a list holding a tensor: a Pack
        dense = tf.convert_to_tensor(tf.IndexedSlices(tf.constant([[5.0]]), tf.constant([1]), tf.constant([2, 1])))
        sparse = tf.SparseTensor([[0, 0]], [2.0], [2, 2]) * x   # SparseTensor * dense
        grad, = tf.gradients(y, x)                                # Pow's gradient: gradients/math_grad.py
        assert len(tf.get_default_graph().as_graph_def().node) > 10
        with tf.Session() as sess:
            values = sess.run([y, grad, packed, dense, sparse.values])
        print(" ".join(sorted(m for m in sys.modules if m.startswith("tensorweave.ops."))))
        print([v.tolist() for v in values])
        """)
    loaded = loaded.split()
    assert "tensorweave.ops.nn.activations" in loaded and "tensorweave.ops.gradients.math_grad" in loaded
    assert not {"tensorweave.ops.image.color", "tensorweave.ops.strings.transform",
                "tensorweave.ops.linalg.linear_operator"} & set(loaded)
    assert values == str([1 + 0 + 9 + 16 - 4 * 2.0, [[2.0, 0.0 + 4], [6.0, 8.0]], [1.0, 2.0], [[0.0], [5.0]], [2.0]])


def test_an_imported_graph_def_loads_the_modules_of_its_ops():
    with tf.Graph().as_default() as g:
        image = tf.constant([[[0.2, 0.4, 0.6]]])
        tf.identity(tf.image.adjust_hue(image, 0.25), name="hue")
        tf.identity(tf.strings.length(tf.constant(["tensorweave"])), name="length")
        want = tf.Session().run(["hue:0", "length:0"])
    text = g.as_graph_def().SerializeToString()
    loaded, hue, length = _run(f"""
        import sys
        import numpy as np
        import tensorweave as tf
        graph_def = tf.GraphDef.FromString({text!r})
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            hue, length = sess.run(["hue:0", "length:0"])
        print(" ".join(m for m in sys.modules if m.startswith("tensorweave.ops.")))
        print(hue.tolist())
        print(length.tolist())
        """)
    assert {"tensorweave.ops.image.color", "tensorweave.ops.strings.transform"} <= set(loaded.split())
    assert hue == str(want[0].tolist()) and length == str(want[1].tolist())


def test_an_unknown_op_type_is_still_not_found_by_name():
    with pytest.raises(tf.errors.NotFoundError, match="Op type not registered 'NoSuchOpType'"):
        registry.lookup("NoSuchOpType")
    with pytest.raises(tf.errors.NotFoundError, match="No registered kernel for op 'NoSuchOpType' on device type CPU"):
        registry.kernel_for("NoSuchOpType")
    graph_def = tf.GraphDef()
    graph_def.node.add(name="odd", op="NoSuchOpType")
    with tf.Graph().as_default(), pytest.raises(tf.errors.NotFoundError, match="'NoSuchOpType'.*node 'odd'"):
        tf.import_graph_def(graph_def)


def test_an_op_type_the_table_lacks_loads_the_whole_library_once():
    """(So that an op registered by a module newer than the table is still found.)"""
    loaded, = _run("""
        import sys
        from tensorweave.ops import registry
        try:
            registry.lookup("NoSuchOpType")
        except Exception as e:
            assert type(e).__name__ == "NotFoundError", e
        print(" ".join(m for m in sys.modules if m.startswith("tensorweave.ops.")))
        """)
    ops = os.path.join(ROOT, "tensorweave", "ops")
    every = {os.path.relpath(os.path.join(folder, f), ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
             for folder, _, files in os.walk(ops) for f in files if f.endswith(".py")} - {"tensorweave.ops"}
    # (and the compiled module where setup.py built it: optimizer_updates.py imports it)
    every |= {os.path.relpath(os.path.join(folder, f.partition(".")[0]), ROOT).replace(os.sep, ".")
              for folder, _, files in os.walk(ops) for f in files
              if f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))}
    assert set(loaded.split()) == every


def test_registering_a_gradient_the_library_has_is_refused_before_its_module_loads():
    """A program's RegisterGradient (or NotDifferentiable) meets the library's registration as it
    did with the library loaded whole, even when the op's module has not been imported yet."""
    refused, overridden, guided = _run("""
        import sys
        import tensorweave as tf
        assert "tensorweave.ops.image.color" not in sys.modules
        try:
            tf.RegisterGradient("AdjustHue")(lambda op, grad: None)
            print("registered")
        except KeyError as e:
            print(e)
        tf.NotDifferentiable("Relu")
        x = tf.constant([1.0])
        print(tf.gradients(tf.nn.relu(x), x))
        tf.RegisterGradient("GuidedRelu")(lambda op, grad: grad * 2.0)   # a name of its own: nothing to load
        with tf.get_default_graph().gradient_override_map({"Identity": "GuidedRelu"}):
            y = tf.identity(x)
        print(tf.Session().run(tf.gradients(y, x)), "tensorweave.ops.strings.transform" in sys.modules)
        """)
    assert refused == "\"Registering two gradient with name 'AdjustHue'!\""
    assert overridden == "[None]"
    assert guided == "[array([2.], dtype=float32)] False"

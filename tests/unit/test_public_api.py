"""The public API is declared once, where each object is defined (`@tf_export`,
tensorweave/framework/tf_export.py). The namespace table generated from the declarations
(tensorweave/_api_table.py, tools/generate_api.py) must be current, every declared name must resolve
to the object declared, every namespace a TF1 program reaches must work, and `import tensorweave`
must load only what it touches."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import tensorweave as tf
from repo_tools import ROOT, load_tool
from tensorweave._api_table import NAMESPACE_PATHS, NAMESPACES


# The namespaces a TF1 program reaches from `import tensorweave as tf`, by attribute.
REACHED = ["", "app", "app.flags", "bitwise", "compat", "compat.v1", "contrib", "contrib.layers", "contrib.rnn",
           "contrib.training", "debugging", "distribute", "distribute.cluster_resolver", "dtypes", "errors", "flags",
           "initializers", "keras", "keras.regularizers", "layers", "linalg", "logging", "losses", "manip", "math",
           "metrics", "nn", "nn.rnn_cell", "queue", "random", "regularizers", "sparse", "summary", "test", "train",
           "train.queue_runner", "python.client.timeline", "strings", "io", "io.gfile", "gfile", "python_io", "image",
           "data", "data.experimental", "ragged"]

# Modules programs import by path (`from tensorweave.python.client import timeline`, `import tensorweave.nn`).
IMPORTED = ["tensorweave.nn", "tensorweave.compat.v1", "tensorweave.python.client.timeline",
            "tensorweave.client.timeline", "tensorweave.train", "tensorweave.layers", "tensorweave.flags"]


def test_namespace_table_is_current():
    generator = load_tool("generate_api")
    with open(generator.OUTPUT, encoding="utf-8") as f:
        current = f.read()
    assert current == generator.render(generator.declarations()), \
        "tensorweave/_api_table.py is stale: run python tools/generate_api.py"


@pytest.mark.parametrize("module_name", sorted(NAMESPACES))
def test_declared_names_resolve_to_the_declared_objects(module_name):
    namespace = importlib.import_module(module_name)
    listed = dir(namespace)
    for name, (source, attribute) in NAMESPACES[module_name].items():
        declared = importlib.import_module(source)
        if attribute is not None:
            declared = getattr(declared, attribute)
        assert getattr(namespace, name) is declared, f"{module_name}.{name} is not {source}.{attribute}"
        assert name in listed, f"dir({module_name}) lacks {name}"


@pytest.mark.parametrize("path", REACHED)
def test_namespace_is_reached_by_attribute(path):
    namespace = tf
    for part in filter(None, path.split(".")):
        namespace = getattr(namespace, part)
    assert namespace is importlib.import_module(NAMESPACE_PATHS[path])
    assert NAMESPACES[NAMESPACE_PATHS[path]], f"tf.{path} declares no names"


@pytest.mark.parametrize("module_name", IMPORTED)
def test_namespace_module_is_imported_by_path(module_name):
    module = importlib.import_module(module_name)
    assert [n for n in dir(module) if not n.startswith("_")]


def test_compat_v1_is_tf_itself():
    import tensorweave.compat.v1 as v1
    from tensorweave import compat, nn
    assert v1 is tf and compat.v1 is tf and tf.compat.v1.nn is nn
    assert tf.compat.v1.nn.rnn_cell.LSTMCell is tf.nn.rnn_cell.LSTMCell


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="tensorweave.nn.*no_such_op"):
        tf.nn.no_such_op


def _loaded_after(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          "print('\\n'.join(m for m in sys.modules if m.startswith('tensorweave')))"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.split()


def test_import_tensorweave_loads_only_the_namespace_table():
    assert sorted(_loaded_after("import tensorweave")) == [
        "tensorweave", "tensorweave._api", "tensorweave._api_table", "tensorweave.compat.v1"]


def test_a_name_loads_its_module_and_the_op_library_not_the_other_namespaces():
    loaded = _loaded_after("import tensorweave as tf\ntf.nn.relu")
    assert "tensorweave.ops.nn.activations" in loaded and "tensorweave.ops.math.operators" in loaded
    assert "tensorweave.ops.image.color" not in loaded   # (an op module loads when its ops are used)
    assert not [m for m in loaded if m.split(".")[1:2] in (["layers"], ["rnn"], ["metrics"], ["train"])]


@pytest.mark.parametrize("first_call", ["tf.convert_to_tensor([1, 2])", "tf.SparseTensor([[0, 0]], [1], [2, 2])",
                                        "tf.convert_to_tensor_or_sparse_tensor([1.0])"])
def test_a_conversion_as_a_programs_first_call_has_the_op_library(first_call):
    """Python values become Consts by a conversion the op library registers: a program whose first
    name converts one (with nothing else loaded yet) must find it."""
    out = subprocess.run([sys.executable, "-c", f"import tensorweave as tf\nprint(type({first_call}).__name__)"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() in (["Tensor"], ["SparseTensor"])

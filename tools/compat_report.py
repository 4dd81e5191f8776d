"""Writes docs/COMPATIBILITY.md: per TF1 namespace, which of TensorFlow's public names tensorweave
has, which it leaves out on purpose (and why), and which it does not have yet.

TensorFlow's names come from tests/unit/fixtures/tf1_names.json (recorded once from
`tf.compat.v1` by tests/unit/fixtures/record_tf1_names.py); tensorweave's from its tf_export
declarations (read by tools/generate_api.py, which writes the namespace table from the same
declarations), so the page stays true: tests/unit/test_compatibility_doc.py fails when it is stale.

    python tools/compat_report.py          # rewrite docs/COMPATIBILITY.md
    python tools/compat_report.py --check  # exit 1 when it is out of date
"""
from __future__ import annotations

import fnmatch
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import generate_api

ROOT = generate_api.ROOT
FIXTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "tf1_names.json")
OUTPUT = os.path.join(ROOT, "docs", "COMPATIBILITY.md")

# Whole namespaces left out on purpose.
NAMESPACE_REASONS = {
    "sysconfig": "build flags of TensorFlow's C++ library; tensorweave has none",
    "user_ops": "custom C++ ops are not loadable",
}

# Names left out on purpose, by glob pattern within a namespace ("*" for any namespace).
NAME_REASONS = [
    ("*", "quantize*", "quantized dtypes (qint8, quint8, ...) are not supported"),
    ("*", "quantized_*", "quantized dtypes (qint8, quint8, ...) are not supported"),
    ("*", "dequantize", "quantized dtypes (qint8, quint8, ...) are not supported"),
    ("tf", "q*int*", "quantized dtypes are not supported"),
    ("tf", "QUANTIZED_DTYPES", "quantized dtypes are not supported"),
    ("tf", "bfloat16", "numpy has no bfloat16"),
    ("tf", "to_bfloat16", "numpy has no bfloat16"),
    ("*", "*_v2_behavior", "tensorweave is TF1 only"),
    ("tf", "enable_eager_execution", "tensorweave runs TF1 graphs; eager execution is not supported"),
    ("tf", "enable_v2_tensorshape", "tensorweave is TF1 only"),
    ("tf", "enable_control_flow_v2", "tensorweave is TF1 only"),
    ("tf", "enable_resource_variables", "variables are always resource variables"),
    ("tf", "disable_resource_variables", "variables are always resource variables"),
    ("tf", "resource_variables_enabled", "variables are always resource variables"),
    ("tf", "enable_tensor_equality", "tensorweave is TF1 only"),
    ("tf", "GradientTape", "eager gradients are TF 2 only"),
    ("tf", "function", "tf.function is TF 2 graph tracing; TF1 programs build graphs directly"),
    ("tf", "Module", "tf.Module is a TF 2 class"),
    ("config", "*functions_run_eagerly", "tf.function is TF 2 graph tracing; TF1 programs build graphs directly"),
    ("config", "*run_functions_eagerly", "tf.function is TF 2 graph tracing; TF1 programs build graphs directly"),
    ("config", "experimental_connect_to_*", "remote eager execution is TF 2 only; TF1 programs name a Session target"),
    ("tf", "*Spec", "TypeSpecs are TF 2 composite-tensor machinery"),
    ("tf", "TypeSpec", "TypeSpecs are TF 2 composite-tensor machinery"),
    ("tf", "type_spec_from_value", "TypeSpecs are TF 2 composite-tensor machinery"),
    ("tf", "RaggedTensorSpec", "TypeSpecs are TF 2 composite-tensor machinery"),
    ("tf", "ragged_fill_empty_rows*", "a TF 2.x addition"),
    ("image", "decode_jxl", "a TF 2.x addition"),
    ("io", "decode_jxl", "JPEG XL: a TF 2.x addition, and Pillow has no JPEG XL decoder"),
    ("io", "RaggedFeature", "ragged parsing of Examples: a TF 2.x addition"),
    ("tf", "LMDBReader", "LMDB databases need the lmdb C library, which is not a dependency"),
    ("tf", "wrap_function", "wrap_function traces into a TF 2 ConcreteFunction (a function called through "
                            "PartitionedCall, its variables lifted out); there is no function-call op here: call the "
                            "Python function in the graph instead"),
    ("tf", "conv", "the N-D Conv op (batch_dims, groups) is a TF 2.x addition; tf.nn.convolution is here"),
    ("debugging", "*able_check_numerics", "TF 2's instrumentation of eager ops and tf.functions; TF1 graphs use "
                                          "tf.add_check_numerics_ops, which is here"),
    ("debugging", "*traceback_filtering*", "a TF 2.x addition: hides TensorFlow's own frames in eager tracebacks"),
    ("summary", "initialize", "initializes tf.contrib.summary's (TF 2-style) writers, which are not provided; "
                              "tf.summary.FileWriter is here"),
    ("image", "generate_bounding_box_proposals", "a TF 2.x addition"),
    ("distribute.cluster_resolver", "GCEClusterResolver", "resolves through Google Compute Engine's API and "
                                                          "metadata service, which are not reachable here"),
    ("distribute.cluster_resolver", "TPUClusterResolver", "TPUs (and the Cloud TPU API naming them) are not "
                                                          "supported"),
    ("strings", "unicode_script", "needs ICU's Unicode script table, which Python's unicodedata lacks"),
    ("tf", "load_*library", "custom C++ ops are not loadable"),
    ("tf", "load_op_library", "custom C++ ops are not loadable"),
    ("*", "COMPILER_VERSION", "describes TensorFlow's C++ build"),
    ("tf", "CXX*", "describes TensorFlow's C++ build"),
    ("tf", "MONOLITHIC_BUILD", "describes TensorFlow's C++ build"),
    ("tf", "check_pinned", "a TensorFlow internal"),
    ("tf", "is_symbolic_tensor", "a TF 2 helper"),
    ("tf", "random_index_shuffle", "a TF 2.x addition"),
    ("tf", "nondifferentiable_batch_function", "TF Serving batching is out of scope"),
    ("tf", "variable_creator_scope", "a TF 2 variable-creation hook"),
    ("tf", "init_scope", "TF 2 function-building machinery"),
    ("tf", "executing_eagerly_outside_functions", "TF 2 function-building machinery"),
    ("tf", "vectorized_map", "TF 2 pfor vectorization"),
    ("tf", "recompute_grad", "TF 2 memory-saving decorator"),
    ("tf", "grad_pass_through", "a TF 2.x addition"),
    ("tf", "CriticalSection", "TF 2 resource machinery"),
    ("nn", "quantized_*", "quantized dtypes are not supported"),
    ("sparse", "cross*", "feature crosses (string hashing) are out of scope"),
    ("tf", "HistogramProto", "protobuf message classes are out of scope"),
    ("tf", "get_session_handle", "session tensor handles are out of scope"),
    ("tf", "get_session_tensor", "session tensor handles are out of scope"),
    ("tf", "delete_session_tensor", "session tensor handles are out of scope"),
    ("dtypes", "qint*", "quantized dtypes are not supported"),
    ("dtypes", "quint*", "quantized dtypes are not supported"),
    ("dtypes", "QUANTIZED_DTYPES", "quantized dtypes are not supported"),
    ("dtypes", "bfloat16", "numpy has no bfloat16"),
    ("saved_model", "save", "TF 2's object-based SavedModel (tf.Module, trackables); TF1's Builder is here"),
    ("saved_model", "load_v2", "TF 2's object-based SavedModel (tf.Module, trackables); TF1's load is here"),
    ("saved_model", "Asset", "TF 2's object-based SavedModel (tf.Module, trackables)"),
    ("saved_model", "SaveOptions", "TF 2's object-based SavedModel (tf.Module, trackables)"),
    ("data", "DatasetSpec", "TypeSpecs are TF 2 composite-tensor machinery"),
    ("data", "NumpyIterator", "Dataset.as_numpy_iterator is TF 2 eager iteration; TF1 iterates with get_next"),
    ("data.experimental", "*Structure", "TypeSpecs of composite values are TF 2 machinery (TensorStructure, "
                                        "tf.TensorSpec, is here)"),
    ("data.experimental", "get_structure", "returns TypeSpecs (TF 2 machinery); output_types/output_shapes are here"),
    ("data.experimental", "dense_to_ragged_batch", "dataset elements hold Tensors and SparseTensors, not "
                                                   "RaggedTensors"),
    ("data.experimental", "ServiceOptions", "the tf.data service (dispatcher and worker servers) is not provided"),
    ("data.experimental", "distributed_save", "the tf.data service (dispatcher and worker servers) is not provided"),
    ("data.experimental", "snapshot", "a TF 2.3 addition; Dataset.cache(filename) keeps a pass in a file"),
    ("data.experimental", "to_variant", "a dataset's variant is a Python pipeline here, not TF's C++ object"),
    ("data.experimental", "from_variant", "a dataset's variant is a Python pipeline here, not TF's C++ object"),
    ("data.experimental", "get_model_proto", "tf.data's autotuning model (a TF 2 proto) does not exist here"),
    ("data.experimental", "enable_debug_mode", "TF 2's switch to run tf.data functions eagerly"),
    ("data.experimental", "make_saveable_from_iterator", "an iterator's position (a running Python pipeline) is not "
                                                         "saved in checkpoints"),
    ("train", "sdca_*", "the ops of tf.contrib.linear_optimizer's SDCA solver, which is not provided (linear "
                        "Estimators train with FTRL and the other optimizers here)"),
    ("train", "do_quantize_training_on_graphdef", "TF's deprecated C++ rewrite of a GraphDef for quantized training; "
                                                  "the fake_quant ops it inserts are here"),
]


def public_names() -> dict:
    """{TF namespace path ('tf' for the top level): tensorweave's declared names in it}."""
    found = generate_api.declarations()
    table = generate_api.table(found)
    return {path or "tf": set(table[generate_api.namespace_module(path)])
            for path in generate_api.namespace_paths(found)}


def reason_for(namespace: str, name: str):
    for ns, pattern, reason in NAME_REASONS:
        if ns in ("*", namespace) and fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


def classify(namespace: str, names: list, ours: set) -> tuple:
    """(present, [(name, reason)] left out on purpose, missing) for one namespace; `ours` its names here."""
    present, on_purpose, missing = [], [], []
    for name in names:
        if name in ours:
            present.append(name)
        elif namespace in NAMESPACE_REASONS:
            on_purpose.append((name, NAMESPACE_REASONS[namespace]))
        elif reason_for(namespace, name):
            on_purpose.append((name, reason_for(namespace, name)))
        else:
            missing.append(name)
    return present, on_purpose, missing


def _names(names: list) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "none"


def render() -> str:
    with open(FIXTURE) as f:
        fixture = json.load(f)
    namespaces = fixture["namespaces"]
    ours = public_names()
    rows, sections = [], []
    totals = [0, 0, 0, 0]
    for ns in sorted(namespaces, key=lambda n: (n != "tf", n)):
        names = namespaces[ns]
        present, on_purpose, missing = classify(ns, names, ours.get(ns, set()))
        label = "tf" if ns == "tf" else f"tf.{ns}"
        rows.append(f"| `{label}` | {len(names)} | {len(present)} | {len(on_purpose)} | {len(missing)} |")
        for i, n in enumerate((len(names), len(present), len(on_purpose), len(missing))):
            totals[i] += n
        part = [f"## `{label}`", "", f"**Present ({len(present)}):** {_names(present)}", ""]
        if on_purpose:
            part += ["**Left out on purpose:**", "", "| name | reason |", "|---|---|"]
            part += [f"| `{n}` | {r} |" for n, r in on_purpose]
            part.append("")
        part += [f"**Not yet ({len(missing)}):** {_names(missing)}", ""]
        sections.append("\n".join(part))
    header = [
        "# TF1 API compatibility",
        "",
        "Generated by `tools/compat_report.py` from the `tf_export` declarations; do not edit by hand (rerun it "
        "after adding names: `tests/unit/test_compatibility_doc.py` fails while this page is stale).",
        "",
        f"TensorFlow's names are `tf.compat.v1` of TensorFlow {fixture['tensorflow_version']} (TF 1.15's API plus a "
        "few later additions, marked as such below), recorded in `tests/unit/fixtures/tf1_names.json`. A name "
        "counts as present when tensorweave declares it in that namespace; `raw_ops`, `compat`, `keras`, "
        "`estimator` and the test/mock helpers are not counted.",
        "",
        "| namespace | TF names | present | left out on purpose | not yet |",
        "|---|---:|---:|---:|---:|",
    ] + rows + [f"| **all** | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} |", ""]
    return "\n".join(header + sections)


def main(argv: list) -> int:
    text = render()
    if "--check" in argv:
        with open(OUTPUT) as f:
            current = f.read()
        if current != text:
            print(f"{OUTPUT} is out of date: run python tools/compat_report.py", file=sys.stderr)
            return 1
        return 0
    with open(OUTPUT, "w") as f:
        f.write(text)
    print("wrote", OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

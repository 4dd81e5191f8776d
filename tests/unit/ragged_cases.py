"""TensorFlow's recorded ragged and ragged-string results (fixtures/tf_ragged.json, recorded by
fixtures/record_tf_ragged.py): each case rebuilt through tensorweave with the recording script's
own builder, and its value written in the fixture's JSON form to compare."""
from __future__ import annotations

import json
import os

import numpy as np
from fixtures.record_tf_ragged import run_case

import tensorweave as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_ragged.json")) as _f:
    CASES = json.load(_f)["cases"]


def _dtype_name(arr: np.ndarray) -> str:
    return "string" if arr.dtype == object else arr.dtype.name


def _plain(x):
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x.decode("latin-1") if isinstance(x, bytes) else x


def as_json(x):
    """A fetched tensorweave value in the fixture's form (see record_tf_ragged.to_json)."""
    if isinstance(x, tf.ragged.RaggedTensorValue):
        return {"ragged": _plain(x.to_list()), "splits": [as_json(s) for s in x.nested_row_splits],
                "dtype": _dtype_name(x.flat_values)}
    if isinstance(x, tf.SparseTensorValue):
        return {"sparse": [as_json(np.asarray(v)) for v in x]}
    if isinstance(x, tuple):
        return {"tuple": [as_json(v) for v in x]}
    arr = np.asarray(x, dtype=object if isinstance(x, bytes) else None)
    return {"dense": _plain(arr.tolist()), "dtype": _dtype_name(arr)}


def cases(prefix: str) -> list:
    return [c for c in CASES if c["fn"].startswith(prefix)]


def case_id(case: dict) -> str:
    return f"{case['fn']}-{CASES.index(case)}"


def check_case(case: dict) -> None:
    with tf.Graph().as_default(), tf.Session() as sess:
        got = as_json(sess.run(run_case(tf, case["fn"], case["args"], dict(case["kwargs"]))))
    assert got == case["result"], (case["fn"], case["args"], case["kwargs"])

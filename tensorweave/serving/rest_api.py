"""TensorFlow Serving's REST API over servables, without HTTP: `RestApi.handle(method, path, body)`
returns (HTTP status, JSON text). model_server.py puts it behind a socket.

    POST /v1/models/M[/versions/N]:predict    {"signature_name": S, "instances": [...]} -> {"predictions": [...]}
                                              {"inputs": {...}}                        -> {"outputs": {...}}
    POST /v1/models/M[/versions/N]:classify   {"examples": [{feature: value}], "context": {...}} -> {"results": ...}
    POST /v1/models/M[/versions/N]:regress    (the same)                               -> {"results": [...]}
    GET  /v1/models/M[/versions/N]            {"model_version_status": [...]}
    GET  /v1/models/M[/versions/N]/metadata   {"model_spec": ..., "metadata": {"signature_def": ...}}

The JSON is TF Serving's (tensorflow_serving/util/json_tensor.cc): values checked against the
signature's dtype, nested lists as dense tensors, strings as text or {"b64": ...}, a string output
whose key ends in `_bytes` written as {"b64": ...}, floats in their shortest text that reads back
to the same float32. Errors are {"error": message} with TF Serving's messages, and the status its
error code maps to (INVALID_ARGUMENT 400, NOT_FOUND 404, ...). Nothing in a request is evaluated.
"""
from __future__ import annotations

import base64
import binascii
import itertools
import json
import logging
import re
from typing import ContextManager, Optional, Protocol

import numpy as np
from google.protobuf import json_format

from tensorweave.framework import dtypes, errors
from tensorweave.ops.io.example_proto import Example
from tensorweave.saved_model.signature_constants import CLASSIFY_METHOD_NAME, REGRESS_METHOD_NAME
from tensorweave.serving.servable import Servable, dtype_name

_log = logging.getLogger("tensorweave")

# TF Serving's ToHTTPStatusCode (model_servers/http_server.cc); anything else is 500
HTTP_STATUS = {errors.OK: 200, errors.CANCELLED: 499, errors.INVALID_ARGUMENT: 400, errors.DEADLINE_EXCEEDED: 504,
               errors.NOT_FOUND: 404, errors.ALREADY_EXISTS: 409, errors.PERMISSION_DENIED: 403,
               errors.RESOURCE_EXHAUSTED: 429, errors.FAILED_PRECONDITION: 400, errors.ABORTED: 409,
               errors.OUT_OF_RANGE: 400, errors.UNIMPLEMENTED: 501, errors.UNAVAILABLE: 503,
               errors.UNAUTHENTICATED: 401}
_CODE_NAMES = {errors.INVALID_ARGUMENT: "INVALID_ARGUMENT", errors.NOT_FOUND: "NOT_FOUND"}

_PREDICT_PATH = re.compile(r"(?i)/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?"
                           r":(classify|regress|predict)")
_MODEL_PATH = re.compile(r"(?i)/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:/(metadata))?")
_BYTES_SUFFIX = "_bytes"   # TF Serving writes a string output named *_bytes as base64
_INT_DTYPES = {"int8", "int16", "int32", "uint8", "int64", "uint32", "uint64"}


class Models(Protocol):
    """What the API serves: the loaded versions of each model."""

    def servable(self, name: str, version: Optional[int]) -> ContextManager[Servable]:
        """The servable of `version` (None: the newest), held while the `with` block runs, or
        NotFoundError with TF Serving's message."""

    def version_status(self, name: str, version: Optional[int]) -> list:
        """[{"version": "N", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}],
        or NotFoundError."""


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _status_text(e: errors.OpError) -> str:
    """An error as absl's Status::ToString() writes it inside another message."""
    return f"{_CODE_NAMES.get(e.error_code, 'UNKNOWN')}: {e.message}"


# -- JSON to tensors -------------------------------------------------------------------------------
def _json_text(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_type(value) -> str:
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "True" if value else "False"
    return {dict: "Object", list: "Array", str: "String"}.get(type(value), "Number")


def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def _b64_decode(value) -> bytes:
    try:
        return base64.b64decode(value["b64"], validate=True)
    except (binascii.Error, ValueError):
        raise _invalid("Unable to base64 decode") from None


def _type_error(value, dtype: str) -> errors.InvalidArgumentError:
    return _invalid(f"JSON Value: {_json_text(value)} Type: {_json_type(value)} is not of expected type: {dtype}")


def _leaf(value, dtype: str):
    """One JSON value as an element of a `dtype` tensor (TF Serving's AddValueToTensor)."""
    if dtype == "string":
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, dict):
            if not _is_b64(value):
                raise _invalid(f"JSON Value: {_json_text(value)} not formatted correctly for base64 data")
            return _b64_decode(value)
        raise _type_error(value, dtype)
    if isinstance(value, bool):
        if dtype == "bool":
            return value
        raise _type_error(value, dtype)
    if dtype in ("float", "double", "half", "bfloat16"):
        if isinstance(value, (int, float)):
            return value
    elif dtype in _INT_DTYPES:
        if isinstance(value, int):
            return value
    raise _type_error(value, dtype)


def _dense_shape(value) -> list:
    """The shape a nested list makes, following first elements (TF Serving's GetDenseTensorShape)."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill(value, level: int, shape: list, dtype: str, out: list) -> None:
    if not isinstance(value, list):
        if level != len(shape):
            raise _invalid(f"JSON Value: {_json_text(value)} found at incorrect level: {level + 1} in the JSON DOM. "
                           f"Expected at level: {len(shape)}")
        out.append(_leaf(value, dtype))
        return
    if level >= len(shape):
        raise _invalid(f"Encountered list at unexpected level: {level} expected < {len(shape)}")
    if len(value) != shape[level]:
        raise _invalid(f"Encountered list at unexpected size: {len(value)} at level: {level} expected size: "
                       f"{shape[level]}")
    for v in value:
        _fill(v, level + 1, shape, dtype, out)


_FAST_TYPES = {"float": {float, int}, "double": {float, int}, "half": {float, int}, "bfloat16": {float, int},
               "bool": {bool}, "string": {str}, **{t: {int} for t in _INT_DTYPES}}


def _regular_leaves(value, shape: list, types) -> Optional[list]:
    """The leaves of a nested list of `shape` when every list has its level's length and every
    leaf's type is one of `types` (a row at a time, not a leaf at a time); None otherwise."""
    if not types:
        return None
    level = [value]
    for n in shape:
        if not all(type(x) is list and len(x) == n for x in level):
            return None
        level = list(itertools.chain.from_iterable(level))
    return level if set(map(type, level)) <= types else None


def json_to_array(value, info) -> np.ndarray:
    """A JSON value (a scalar, a nested list, a {"b64": ...}) as the tensor a signature input
    `info` (TensorInfo) takes; InvalidArgumentError with TF Serving's message when it does not fit."""
    dtype = dtype_name(info.dtype)
    shape = _dense_shape(value)
    flat = _regular_leaves(value, shape, _FAST_TYPES.get(dtype))
    if flat is None:   # ragged, or a value to check one by one (and to name in the error)
        flat = []
        _fill(value, 0, shape, dtype, flat)
    elif dtype == "string":
        flat = [v.encode("utf-8") for v in flat]
    if dtype == "string":
        arr = np.empty(len(flat), dtype=object)
        arr[:] = flat
        return arr.reshape(shape)
    target = np.dtype(dtypes.as_dtype(info.dtype).as_numpy_dtype)
    if target.kind == "f":
        try:
            wide = np.array(flat, dtype=np.float64)
        except OverflowError:   # an integer past any float
            raise _invalid(f"Cannot convert JSON value: {_json_text(value)} to {dtype} without loss of "
                           "precision.") from None
        with np.errstate(over="ignore"):   # past the dtype's range: the error below
            arr = wide.astype(target)
        lossy = np.isinf(arr) & np.isfinite(wide)
        if lossy.any():
            raise _invalid(f"Cannot convert JSON value: {_json_text(flat[int(np.argmax(lossy))])} to {dtype} without "
                           "loss of precision.")
    elif target.kind in "iu":
        limits = np.iinfo(target)
        bad = [v for v in flat if not limits.min <= v <= limits.max]
        if bad:
            raise _type_error(bad[0], dtype)
        arr = np.array(flat, dtype=target)
    else:
        arr = np.array(flat, dtype=target)
    return arr.reshape(shape)


def _instances_to_inputs(instances: list, infos) -> dict:
    """The row format: one element per instance (a value, or an object of named inputs), stacked
    along a new first dimension (TF Serving's FillTensorMapFromInstancesList)."""
    names = sorted(infos)
    first = instances[0]
    objects = isinstance(first, dict) and not _is_b64(first)
    if not objects and len(infos) > 1:
        raise _invalid("instances is a plain list, but expecting list of objects as multiple input tensors required "
                       "as per tensorinfo_map")
    rows: dict = {n: [] for n in names}
    for i, elem in enumerate(instances):
        is_object = isinstance(elem, dict) and not _is_b64(elem)
        if objects != is_object:
            raise _invalid(f"Expecting object but got list at item {i} of input list" if objects
                           else f"Expecting value/list but got object at item {i} of input list")
        items = elem.items() if objects else [(names[0], elem)]
        for name, value in items:
            where = f"Failed to process element: {i} key: {name} of 'instances' list" if objects \
                else f"Failed to process element: {i} of 'instances' list"
            try:
                if name not in infos:
                    raise _invalid(f"JSON object: does not have named input: {name}")
                arr = json_to_array(value, infos[name])
                if rows[name] and rows[name][0].shape != arr.shape:
                    first_shape = rows[name][0].shape
                    if rows[name][0].size != arr.size:
                        raise _invalid(f"Expecting tensor size: {rows[name][0].size} but got: {arr.size}")
                    raise _invalid(f"Expecting shape [{','.join(map(str, first_shape))}] but got: "
                                   f"[{','.join(map(str, arr.shape))}]")
            except errors.InvalidArgumentError as e:
                raise _invalid(f"{where}. Error: {_status_text(e)}") from None
            rows[name].append(arr)
        if objects and set(elem) != set(names):
            raise _invalid(f"Failed to process element: {i} of 'instances' list. JSON object: {_json_text(elem)} "
                           f"keys must be equal to: {','.join(names)}")
    return {n: np.stack(r) for n, r in rows.items()}


def _columns_to_inputs(value, infos) -> dict:
    """The columnar format: one value for a single input, or an object of named inputs (TF
    Serving's FillTensorMapFromInputsMap)."""
    if not isinstance(value, dict) or _is_b64(value):
        if len(infos) > 1:
            raise _invalid("inputs is a plain value/list, but expecting an object as multiple input tensors required "
                           "as per tensorinfo_map")
        name = next(iter(infos))
        return {name: json_to_array(value, infos[name])}
    out = {}
    for name in sorted(infos):
        if name not in value:
            raise _invalid(f"Missing named input: {name} in 'inputs' object.")
        out[name] = json_to_array(value[name], infos[name])
    return out


# -- tensors to JSON -------------------------------------------------------------------------------
def _float_texts(flat: np.ndarray) -> list:
    """TF Serving's WriteDecimal for each value: '%g' when it reads back to the same value, else
    all significant digits; a whole number gets '.0'; NaN, Infinity, -Infinity."""
    digits = 9 if flat.dtype.itemsize <= 4 else 17
    texts = ["%g" % v for v in flat.tolist()]
    lossy = np.nonzero(np.array(texts, dtype=flat.dtype) != flat)[0] if flat.size else []
    for i in lossy:
        texts[i] = "%.*g" % (digits, flat[i])
    for i, t in enumerate(texts):
        if t in ("nan", "-nan"):
            texts[i] = "NaN"
        elif t in ("inf", "-inf"):
            texts[i] = "Infinity" if t == "inf" else "-Infinity"
        elif "." not in t and "e" not in t:
            texts[i] = t + ".0"
    return texts


def _string_text(s: bytes, as_b64: bool) -> str:
    if not as_b64:
        try:
            return _json_text(s.decode("utf-8"))
        except UnicodeDecodeError:
            pass   # JSON text holds no raw bytes: base64, as for a *_bytes output
    return '{"b64":' + _json_text(base64.b64encode(s).decode("ascii")) + "}"


def _leaf_texts(arr: np.ndarray, as_b64: bool) -> list:
    flat = arr.reshape(-1)
    kind = flat.dtype.kind
    if kind == "f":
        return _float_texts(flat if flat.dtype.itemsize >= 4 else flat.astype(np.float32))
    if kind == "b":
        return ["true" if v else "false" for v in flat.tolist()]
    if kind in "iu":
        return [str(v) for v in flat.tolist()]
    if kind in "OS":
        return [_string_text(bytes(v), as_b64) for v in flat.tolist()]
    raise _invalid(f"Failed to write JSON value for tensor type: {arr.dtype.name}")


def _nest(texts: list, shape: tuple) -> str:
    if not shape:
        return texts[0]
    if len(shape) == 1:
        return "[" + ",".join(texts) + "]"
    step = len(texts) // shape[0] if shape[0] else 0
    return "[" + ",".join(_nest(texts[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def array_to_json(arr: np.ndarray, as_b64: bool = False) -> str:
    """A tensor as JSON text: nested lists (a scalar bare)."""
    return _nest(_leaf_texts(arr, as_b64), arr.shape)


def _rows_json(outputs: dict) -> str:
    """{"predictions": [...]}: one entry per instance, a bare value for a single output, else an
    object of outputs (TF Serving's MakeRowFormatJsonFromTensors)."""
    batch = None
    for name, arr in outputs.items():
        if arr.ndim == 0:
            raise _invalid(f"Tensor name: {name} has no shape information ")
        if batch is not None and arr.shape[0] != batch:
            raise _invalid(f"Tensor name: {name} has inconsistent batch size: {arr.shape[0]} expecting: {batch}")
        batch = arr.shape[0]
    per_output = {name: [array_to_json(arr[i, ...], name.endswith(_BYTES_SUFFIX)) for i in range(batch)]
                  for name, arr in outputs.items()}
    if len(outputs) == 1:
        items = next(iter(per_output.values()))
    else:
        items = ["{" + ",".join(f"{_json_text(n)}:{rows[i]}" for n, rows in per_output.items()) + "}"
                 for i in range(batch)]
    return '{"predictions":[' + ",".join(items) + "]}"


def _columns_json(outputs: dict) -> str:
    texts = {n: array_to_json(a, n.endswith(_BYTES_SUFFIX)) for n, a in outputs.items()}
    if len(texts) == 1:
        return '{"outputs":' + next(iter(texts.values())) + "}"
    return '{"outputs":{' + ",".join(f"{_json_text(n)}:{t}" for n, t in texts.items()) + "}}"


# -- classify and regress: tf.Examples from JSON ---------------------------------------------------
def _add_to_feature(feature, name: str, value) -> None:
    """One JSON value into a Feature (TF Serving's AddValueToFeature): a float (a number written
    with a point or exponent), an int64 (an integer or a bool), bytes (a string or {"b64": ...})."""
    if isinstance(value, bool):
        kind, v = "int64_list", int(value)
    elif isinstance(value, float):
        kind, v = "float_list", value
    elif isinstance(value, int):
        if value >= 2 ** 63:
            raise _invalid(f"Feature: {name} has uint64 element. Only int64 is supported.")
        kind, v = "int64_list", value
    elif isinstance(value, str):
        kind, v = "bytes_list", value.encode("utf-8")
    elif _is_b64(value):
        kind, v = "bytes_list", _b64_decode(value)
    else:
        raise _invalid(f"Feature: {name} has element with unexpected JSON type: {_json_type(value)}")
    current = feature.WhichOneof("kind")
    if current not in (None, kind):
        raise _invalid(f"Unexpected element type in feature: {name} expecting type: {current.split('_')[0]}")
    getattr(feature, kind).value.append(v)


def _example(obj, context: Optional[dict] = None) -> bytes:
    if not isinstance(obj, dict):
        raise _invalid(f"Example must be JSON object but got JSON {_json_type(obj)}")
    example = Example()
    for source in (context or {}, obj):   # an example's own feature wins over the context's
        for name, content in source.items():
            feature = example.features.feature[name]
            feature.Clear()
            for v in (content if isinstance(content, list) else [content]):
                _add_to_feature(feature, name, v)
    return example.SerializeToString()


def _examples(doc: dict, method: str) -> np.ndarray:
    context = doc.get("context")
    if context is not None and not isinstance(context, dict):
        raise _invalid(f"Example must be JSON object but got JSON {_json_type(context)}")
    if "examples" not in doc:
        raise _invalid(f"JSON Value: {_json_text(doc)} When method is {method}, key 'examples' is expected and was "
                       "not found")
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise _invalid(f"JSON Value: {_json_text(doc)} Expecting 'examples' value to be an list/array")
    if not examples:
        raise _invalid(f"JSON Value: {_json_text(doc)} 'examples' value is an empty array")
    out = np.empty(len(examples), dtype=object)
    out[:] = [_example(e, context) for e in examples]
    return out


def _example_input(sig, method_name: str, what: str) -> str:
    """The key of the one string input of a classify/regress signature (TF Serving checks it)."""
    if sig.method_name != method_name:
        raise _invalid(f"Expected {what} signature method_name to be {method_name}. Was: {sig.method_name}")
    if len(sig.inputs) != 1:
        raise _invalid("Expected one input Tensor.")
    key = next(iter(sig.inputs))
    if dtype_name(sig.inputs[key].dtype) != "string":
        raise _invalid(f"Expected {what} input {key} to be DT_STRING (serialized tf.Examples)")
    return key


def classify(servable: Servable, signature_name: Optional[str], examples: np.ndarray) -> str:
    """{"results": [[[label, score], ...] per example]} from the signature's `classes` and/or `scores`."""
    sig = servable.signature(signature_name)
    key = _example_input(sig, CLASSIFY_METHOD_NAME, "classification")
    wanted = [k for k in ("classes", "scores") if k in sig.outputs]
    if not wanted:
        raise _invalid("Expected classification signature outputs to contain classes and/or scores")
    out = servable.run(signature_name, {key: examples}, wanted)
    n = len(examples)
    for k, arr in out.items():
        if arr.ndim != 2 or arr.shape[0] != n:
            raise _invalid(f"Expected {k} Tensor shape: [batch_size num_classes] but got "
                           f"[{','.join(map(str, arr.shape))}]")
    classes, scores = out.get("classes"), out.get("scores")
    if classes is not None and scores is not None and classes.shape != scores.shape:
        raise _invalid(f"Tensors class and score should match in shape: [{','.join(map(str, classes.shape))}] vs "
                       f"[{','.join(map(str, scores.shape))}]")
    width = (classes if classes is not None else scores).shape[1]
    score_texts = _float_texts(scores.astype(np.float32).reshape(-1)) if scores is not None \
        else ["0.0"] * (n * width)
    rows = []
    for i in range(n):
        pairs = []
        for j in range(width):
            label = _string_text(bytes(classes[i, j]), False) if classes is not None else '""'
            pairs.append(f"[{label},{score_texts[i * width + j]}]")
        rows.append("[" + ",".join(pairs) + "]")
    return '{"results":[' + ",".join(rows) + "]}"


def regress(servable: Servable, signature_name: Optional[str], examples: np.ndarray) -> str:
    """{"results": [value per example]} from the signature's `outputs`."""
    sig = servable.signature(signature_name)
    key = _example_input(sig, REGRESS_METHOD_NAME, "regression")
    if "outputs" not in sig.outputs:
        raise _invalid("No regression outputs found in SignatureDef")
    values = servable.run(signature_name, {key: examples}, ["outputs"])["outputs"]
    n = len(examples)
    if not (values.shape == (n,) or values.shape == (n, 1)):
        raise _invalid(f"Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got "
                       f"[{','.join(map(str, values.shape))}]")
    return '{"results":[' + ",".join(_float_texts(values.astype(np.float32).reshape(-1))) + "]}"


# -- metadata --------------------------------------------------------------------------------------
def _message_dict(msg) -> dict:
    """A proto as TF Serving prints it: field names as in the .proto, every field, set or not."""
    try:
        return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)
    except TypeError:   # protobuf before 5.26 names it differently
        return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                         including_default_value_fields=True)


def metadata(servable: Servable, model_name: str) -> dict:
    return {"model_spec": {"name": model_name, "signature_name": "", "version": str(servable.version)},
            "metadata": {"signature_def": {"signature_def": {
                k: _message_dict(v) for k, v in sorted(servable.signature_defs.items())}}}}


# -- requests --------------------------------------------------------------------------------------
def _parse(body: bytes) -> dict:
    if not body:
        raise _invalid("JSON Parse error: The document is empty")
    try:
        doc = json.loads(body)
    except UnicodeDecodeError as e:
        raise _invalid(f"JSON Parse error: Invalid encoding in string. at offset: {e.start}") from None
    except json.JSONDecodeError as e:
        raise _invalid(f"JSON Parse error: {e.msg}. at offset: {e.pos}") from None
    except RecursionError:
        raise _invalid("JSON Parse error: nested too deeply") from None
    if not isinstance(doc, dict):
        raise _invalid(f"JSON Value: {_json_text(doc)} Is not object")
    name = doc.get("signature_name")
    if name is not None and not isinstance(name, str):
        raise _invalid(f"JSON Value: {_json_text(doc)} not formatted correctly. 'signature_name' key must be a "
                       "string value.")
    return doc


def predict(servable: Servable, doc: dict) -> str:
    signature_name = doc.get("signature_name")
    infos = servable.signature(signature_name).inputs
    if not infos:
        raise _invalid(f"Failed to get input map for signature: {signature_name or 'DEFAULT'}")
    if "instances" in doc and "inputs" in doc:
        raise _invalid(f"JSON Value: {_json_text(doc)} Not formatted correctly expecting only one of 'inputs' or "
                       "'instances' keys to exist ")
    if "instances" in doc:
        instances = doc["instances"]
        if not isinstance(instances, list):
            raise _invalid(f"JSON Value: {_json_text(doc)} Excepting 'instances' to be an list/array")
        if not instances:
            raise _invalid(f"JSON Value: {_json_text(doc)} No values in 'instances' array")
        return _rows_json(servable.run(signature_name, _instances_to_inputs(instances, infos)))
    if "inputs" in doc:
        return _columns_json(servable.run(signature_name, _columns_to_inputs(doc["inputs"], infos)))
    raise _invalid("Missing 'inputs' or 'instances' key")


class RestApi:
    """TF Serving's REST API over `models`."""

    def __init__(self, models: Models):
        self.models = models

    def handle(self, method: str, path: str, body: bytes = b"") -> tuple:
        """(HTTP status, JSON text) for one request; never raises."""
        try:
            return 200, self._dispatch(method, path, body)
        except errors.OpError as e:
            return HTTP_STATUS.get(e.error_code, 500), _json_text({"error": e.message})
        except Exception as e:  # noqa: BLE001 - a request that trips a bug gets a 500, the server goes on
            _log.exception("tensorweave serve: %s %s failed", method, path)
            return 500, _json_text({"error": f"{type(e).__name__}: {e}"})

    def _dispatch(self, method: str, path: str, body: bytes) -> str:
        m = _PREDICT_PATH.fullmatch(path)
        if method == "POST" and m:
            name, version, label, verb = m.groups()
            with self.models.servable(name, self._version(version, label)) as servable:
                doc = _parse(body)
                if verb == "predict":
                    return predict(servable, doc)
                examples = _examples(doc, verb)
                return (classify if verb == "classify" else regress)(servable, doc.get("signature_name"), examples)
        m = _MODEL_PATH.fullmatch(path)
        if method == "GET" and m:
            name, version, label, meta = m.groups()
            if not name:
                raise _invalid("Missing model name in request.")
            version = self._version(version, label)
            if meta:
                with self.models.servable(name, version) as servable:
                    return _json_text(metadata(servable, name))
            return _json_text({"model_version_status": self.models.version_status(name, version)})
        raise _invalid(f"Malformed request: {method} {path}")

    @staticmethod
    def _version(version: Optional[str], label: Optional[str]) -> Optional[int]:
        if label is not None:
            raise errors.NotFoundError(None, None, f"Unrecognized servable version label: {label}")
        if version is None:
            return None
        if len(version) > 18:   # past int64
            raise _invalid(f"Failed to convert version: {version} to numeric.")
        return int(version)

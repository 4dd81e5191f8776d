"""Decoding records: tf.decode_raw (bytes as numbers), tf.decode_csv (CSV fields with
defaults), tf.string_to_number, tf.io.decode_compressed."""
from __future__ import annotations

import zlib

import numpy as np

from tensorweave.framework import dtypes, limits
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, invalid, make_op, string_array, string_result
from tensorweave.ops.registry import register


_RAW_TYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint16, dtypes.uint8,
              dtypes.int16, dtypes.int8, dtypes.int64, dtypes.complex64, dtypes.complex128, dtypes.bool)


# -- DecodeRaw ---------------------------------------------------------------------------------
def _decode_raw_infer(op):
    s = op.inputs[0].shape
    return [(op.get_attr("out_type"), s.concatenate([None]) if s.ndims is not None else TensorShape(None))]


def _decode_raw_kernel(node, ctx):
    dt = np.dtype(dtypes.as_dtype(node.attr["out_type"]).as_numpy_dtype)
    dt = dt.newbyteorder("<" if node.attr.get("little_endian", True) else ">") if dt.itemsize > 1 else dt
    name = dtypes.as_dtype(node.attr["out_type"]).name

    def run(data):
        if type(data) is bytes and not len(data) % dt.itemsize:   # one record (a reader's value)
            return np.frombuffer(data, dtype=dt).astype(dt.newbyteorder("="), copy=False)
        arr = string_array(data)
        flat = arr.reshape(-1)
        if not flat.size:
            return np.zeros(arr.shape + (0,), dtype=dt.newbyteorder("="))
        size = len(flat[0])
        if size % dt.itemsize:
            raise invalid(node, f"Input to DecodeRaw has length {size} that is not a multiple of {dt.itemsize}, "
                                f"the size of {name}")
        for i, s in enumerate(flat):
            if len(s) != size:
                raise invalid(node, f"DecodeRaw requires input strings to all be the same size, but element {i} "
                                    f"has size {len(s)} != {size}")
        out = np.frombuffer(b"".join(flat), dtype=dt).astype(dt.newbyteorder("="), copy=False)
        return out.reshape(arr.shape + (size // dt.itemsize,))
    return run


register("DecodeRaw", _decode_raw_infer, _decode_raw_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="bytes")


@tf_export("io.decode_raw", "decode_raw")
def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):
    """tf.decode_raw(input_bytes, out_type, little_endian=True, name=None): each string's bytes
    as a vector of `out_type` numbers (all strings the same length); shape input + [n]."""
    input_bytes = bytes if input_bytes is None else input_bytes
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _RAW_TYPES:
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {out_type.name} not in list of allowed "
                        f"values: {', '.join(t.name for t in _RAW_TYPES)}")
    with name_scope(name, "DecodeRaw"):
        t = as_string_tensor(input_bytes)
        return make_op("DecodeRaw", [t], {"out_type": out_type, "little_endian": bool(little_endian)},
                       name="DecodeRaw").outputs[0]


# -- StringToNumber ----------------------------------------------------------------------------
def _to_number(node, s: bytes, np_dt):
    text = s.decode("utf-8", "replace").strip()
    try:
        if np.issubdtype(np_dt, np.integer):
            v = int(text, 10)
            info = np.iinfo(np_dt)
            if not info.min <= v <= info.max:
                raise ValueError
            return v
        return float(text)
    except ValueError:
        raise invalid(node, f"StringToNumberOp could not correctly convert string: {s.decode('utf-8', 'replace')}") \
            from None


def _string_to_number_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["out_type"]).as_numpy_dtype

    def run(x):
        arr = string_array(x)
        out = np.array([_to_number(node, s, np_dt) for s in arr.reshape(-1)], dtype=np_dt)
        return out.reshape(arr.shape)
    return run


register("StringToNumber", lambda op: [(op.get_attr("out_type"), op.inputs[0].shape)], _string_to_number_kernel,
         grad=None, dtypes=(dtypes.string,), dtype_param="string_tensor")


@tf_export("strings.to_number", "string_to_number")
def string_to_number(string_tensor=None, out_type=dtypes.float32, name=None, input=None):
    """tf.string_to_number(string_tensor, out_type=tf.float32, name=None): parses each string
    as a number of `out_type` (float32, float64, int32, int64)."""
    string_tensor = input if string_tensor is None else string_tensor
    out_type = dtypes.as_dtype(out_type)
    if out_type not in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64):
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {out_type.name} not in list of allowed "
                        "values: float32, float64, int32, int64")
    t = as_string_tensor(string_tensor)
    return make_op("StringToNumber", [t], {"out_type": out_type}, name=name or "StringToNumber").outputs[0]


# -- DecodeCSV ---------------------------------------------------------------------------------
def split_csv(node, record: bytes, delim: bytes, quoted: bool, where: str) -> list:
    if not quoted or b'"' not in record:
        return record.split(delim)
    fields, i, n = [], 0, len(record)
    while True:
        if i < n and record[i:i + 1] == b'"':
            buf = bytearray()
            i += 1
            while True:
                j = record.find(b'"', i)
                if j < 0:
                    raise invalid(node, f"Quoted field has to end with quote followed by delim or end in {where}")
                buf += record[i:j]
                if record[j + 1:j + 2] == b'"':
                    buf += b'"'
                    i = j + 2
                    continue
                i = j + 1
                break
            if i < n and record[i:i + len(delim)] != delim:
                raise invalid(node, f"Quoted field has to end with quote followed by delim or end in {where}")
            fields.append(bytes(buf))
        else:
            j = record.find(delim, i)
            end = n if j < 0 else j
            field = record[i:end]
            if b'"' in field:
                raise invalid(node, f"Unquoted fields cannot have quotes inside in {where}")
            fields.append(field)
            i = end
        if i >= n:
            return fields
        i += len(delim)
        if i == n:
            fields.append(b"")
            return fields


def csv_value(node, field: bytes, default, dt, na: bytes, col: int, where: str):
    """One CSV field as a value of `dt`: its column's default when empty or `na` (an error when the
    column has none), else the field parsed; `where` names the record in errors."""
    if field == na or (not field and dt is not dtypes.string):
        if np.size(default) == 0:
            raise invalid(node, f"Field {col} is required but missing in {where}!")
        return np.asarray(default).reshape(-1)[0]
    if dt is dtypes.string:
        return field
    text = field.decode("utf-8", "replace")
    try:
        if dt.is_integer:
            v = int(text.strip(), 10)
            info = np.iinfo(dt.as_numpy_dtype)
            if not info.min <= v <= info.max:
                raise ValueError
            return v
        return float(text)
    except ValueError:
        raise invalid(node, f"Field {col} in {where} is not a valid {dt.name}: {text}") from None


def csv_fields(node, record: bytes, delim: bytes, quoted: bool, select: list, count: int, where: str) -> list:
    """The fields of one CSV record (only the `select` columns when given); `count` expected."""
    fields = split_csv(node, record, delim, quoted, where)
    if select:
        if max(select) >= len(fields):
            raise invalid(node, f"Expect {max(select) + 1} fields but have {len(fields)} in {where}")
        fields = [fields[c] for c in select]
    if len(fields) != count:
        raise invalid(node, f"Expect {count} fields but have {len(fields)} in {where}")
    return fields


def _decode_csv_kernel(node, ctx):
    out_types = [dtypes.as_dtype(t) for t in node.attr["OUT_TYPE"]]
    delim = node.attr["field_delim"].encode()
    quoted = node.attr["use_quote_delim"]
    na = node.attr["na_value"].encode()
    select = node.attr.get("select_cols") or []

    def run(records, *defaults):
        arr = string_array(records)
        flat = arr.reshape(-1)
        cols: list = [[] for _ in out_types]
        for r, rec in enumerate(flat):
            fields = csv_fields(node, bytes(rec), delim, quoted, select, len(out_types), f"record {r}")
            for c, (f, d, dt) in enumerate(zip(fields, defaults, out_types)):
                cols[c].append(csv_value(node, f, d, dt, na, c, f"record {r}"))
        outs = []
        for c, dt in enumerate(out_types):
            if dt is dtypes.string:
                outs.append(string_result(cols[c], arr.shape))
            else:
                outs.append(np.asarray(cols[c], dtype=dt.as_numpy_dtype).reshape(arr.shape))
        return outs[0] if len(outs) == 1 else tuple(outs)
    return run


register("DecodeCSV", lambda op: [(t, op.inputs[0].shape) for t in op.get_attr("OUT_TYPE")], _decode_csv_kernel,
         grad=None, dtypes=(dtypes.string,), dtype_param="records")

CSV_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.string)


def csv_defaults(record_defaults, op: str) -> list:
    """A CSV reader's record_defaults as tensors: each a one-element tensor (the column's dtype and
    value of an empty field) or empty, or a DType (an empty default: the column is required)."""
    defaults = []
    for i, d in enumerate(record_defaults):
        if isinstance(d, dtypes.DType):
            d = convert_to_tensor(np.zeros(0, d.as_numpy_dtype if d is not dtypes.string else object), dtype=d)
        t = convert_to_tensor(d, name=f"record_defaults_{i}")
        if t.dtype not in CSV_TYPES:
            raise TypeError(f"{op}: record_defaults[{i}] has DataType {t.dtype.name} not in list of allowed "
                            "values: " + ", ".join(x.name for x in CSV_TYPES))
        if t.shape.ndims not in (None, 0, 1):
            raise ValueError(f"{op}: Shape of a default must be a length-0 or length-1 vector, or a scalar "
                             f"(record_defaults[{i}] has shape {t.shape})")
        defaults.append(t)
    return defaults


def check_csv_options(select_cols, count: int, field_delim: str) -> None:
    """select_cols (strictly increasing, non-negative, one per default) and field_delim (one char)."""
    if select_cols is not None and any(select_cols[i] >= select_cols[i + 1] for i in range(len(select_cols) - 1)):
        raise ValueError("select_cols is not strictly increasing.")
    if select_cols is not None and select_cols and select_cols[0] < 0:
        raise ValueError("select_cols contains negative values.")
    if select_cols is not None and len(select_cols) != count:
        raise ValueError("Length of select_cols and record_defaults do not match.")
    if len(field_delim) != 1:
        raise ValueError(f"field_delim should be only 1 char, got {field_delim!r}")


@tf_export("io.decode_csv", "decode_csv")
def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """tf.decode_csv(records, record_defaults, field_delim=',', use_quote_delim=True, name=None,
    na_value='', select_cols=None): one tensor per column, each of `records`' shape. Each
    default is a one-element tensor (the column's dtype and value for an empty field) or empty
    (the column is required)."""
    check_csv_options(select_cols, len(record_defaults), field_delim)
    with name_scope(name, "DecodeCSV"):
        records = as_string_tensor(records, name="records")
        defaults = csv_defaults(record_defaults, "DecodeCSV")
        attrs = {"OUT_TYPE": [t.dtype for t in defaults], "field_delim": field_delim,
                 "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
                 "select_cols": list(select_cols or [])}
        op = make_op("DecodeCSV", [records] + defaults, attrs, name="DecodeCSV")
        return list(op.outputs)


# -- DecodeCompressed --------------------------------------------------------------------------
def _decompress_kernel(node, ctx):
    kind = node.attr["compression_type"]

    def one(s: bytes) -> bytes:
        if kind not in ("GZIP", "ZLIB"):
            return s
        # Bounded: a few kilobytes of compressed zeros may claim gigabytes (a client's graph must
        # not make the server hold them), so output past the op-output limit is refused unread.
        room = limits.value(limits.OP_OUTPUT_ELEMENTS)
        wbits = 16 + zlib.MAX_WBITS if kind == "GZIP" else zlib.MAX_WBITS
        out, rest = [], s
        try:
            while rest:   # (a gzip file may hold several members)
                d = zlib.decompressobj(wbits)
                out.append(d.decompress(rest, room + 1))
                room -= len(out[-1])
                if room < 0 or d.unconsumed_tail:
                    raise limits.exceeded(limits.OP_OUTPUT_ELEMENTS, limits.value(limits.OP_OUTPUT_ELEMENTS) + 1,
                                          "DecodeCompressed output of at least", node.name)
                if not d.eof:
                    raise zlib.error("incomplete or truncated stream")
                rest = d.unused_data if kind == "GZIP" else b""
        except zlib.error as e:
            raise invalid(node, f"Could not decompress {kind} data: {e}") from None
        return b"".join(out)

    def run(x):
        arr = string_array(x)
        return string_result([one(bytes(s)) for s in arr.reshape(-1)], arr.shape)
    return run


register("DecodeCompressed", lambda op: [(dtypes.string, op.inputs[0].shape)], _decompress_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="bytes")


@tf_export("io.decode_compressed", "decode_compressed")
def decode_compressed(bytes, compression_type="", name=None):
    """tf.io.decode_compressed(bytes, compression_type='', name=None): each string decompressed
    ('' leaves it as it is, 'ZLIB', 'GZIP')."""
    if compression_type not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"compression_type must be '', 'ZLIB' or 'GZIP', got {compression_type!r}")
    t = as_string_tensor(bytes)
    return make_op("DecodeCompressed", [t], {"compression_type": compression_type},
                   name=name or "DecodeCompressed").outputs[0]

"""Random ops and TF1's seeding rules (graph seed + op seed).

Each stateful random op draws from one numpy Generator per op and session, created when the
op is first planned (kept in the session's resource manager, so every plan of the session
shares it): each run draws new numbers, and two sessions with the same seeds draw the same
sequences. Seeds (0, 0) mean nondeterministic, as in TF. Numbers are not bit-equal to TF's, except the
stateless ops': those run TF's Philox4x32-10 counter-based generator (in numpy, vectorised) and
give TF's numbers bit for bit, TF's own samplers included (gamma, Poisson, binomial, the
parameterized truncated normal).
"""
from __future__ import annotations

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tensor_util import constant_value, constant_value_as_shape
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat, stack
from tensorweave.ops.array.core import constant, reshape, shape as shape_of, size
from tensorweave.ops.array.fill import ones_like, zeros_like
from tensorweave.ops.array.pad import broadcast_dynamic_shape, broadcast_to, pad
from tensorweave.ops.helpers import FLOATS, TFNodes, c_function, check_output_size, make_op, same_as_input
from tensorweave.ops.intra_op import parallel_ranges
from tensorweave.ops.math.binary import add, maximum, xlogy
from tensorweave.ops.math.cast import cast
from tensorweave.ops.math.reduction import reduce_sum
from tensorweave.ops.math.sequences import range as range_
from tensorweave.ops.math.special import igamma_grad_a, lgamma
from tensorweave.ops.math.unary import exp
from tensorweave.ops.registry import register, register_gpu


DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2 ** 31 - 1
_RNG_CONTAINER = "_random_generators"


# -- seeds ----------------------------------------------------------------------------------------
@tf_export("random.set_random_seed", "set_random_seed")
def set_random_seed(seed) -> None:
    """tf.set_random_seed(seed): the graph-level seed of the default graph."""
    get_default_graph().seed = seed


def _truncate_seed(seed: int) -> int:
    return int(seed) % _MAXINT32


@tf_export("random.get_seed", "get_seed")
def get_seed(op_seed) -> tuple:
    """tf.get_seed(op_seed) -> (graph seed, op seed): the op's seeds under TF's rules. With a graph
    seed and no op seed, the op seed is the graph's last op id; with neither, (None, None)."""
    g = get_default_graph()
    global_seed = g.seed
    if global_seed is not None:
        if op_seed is None:
            op_seed = g._id_counter
        seeds = (_truncate_seed(global_seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        return (0, _MAXINT32)
    return seeds


def seed_attrs(seed) -> dict:
    """The seed/seed2 attrs of a stateful random op with op-level `seed`, under TF's rules."""
    s1, s2 = get_seed(seed)
    return {"seed": s1 or 0, "seed2": s2 or 0}


def op_generator(node, ctx) -> np.random.Generator:
    """The numpy Generator of a stateful random op: one per op and session (kept in the
    session's resources), seeded from its seed attrs; fresh entropy for seeds (0, 0)."""
    seed, seed2 = int(node.attr.get("seed", 0) or 0), int(node.attr.get("seed2", 0) or 0)
    if seed == 0 and seed2 == 0:
        return np.random.default_rng()
    key = f"{node.name}/{node.op}/{seed}/{seed2}"
    return ctx.resources.lookup_or_create(_RNG_CONTAINER, key, lambda: np.random.default_rng([seed, seed2]))


# -- helpers --------------------------------------------------------------------------------------
def _shape_tensor(shape) -> Tensor:
    """A 1-D int32 (or int64) shape tensor, as TF's tensor_util.shape_tensor."""
    if isinstance(shape, Tensor) or hasattr(shape, "_as_graph_element"):
        t = convert_to_tensor(shape)
        if t.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"Shape tensors must be int32 or int64, got {t.dtype.name}")
        return t
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape):
        return stack([convert_to_tensor(d, dtype=dtypes.int32) for d in shape], name="shape")
    arr = np.asarray(shape)
    if arr.dtype.kind not in "iu":  # Dimension objects, or an empty list
        arr = np.asarray([int(d) for d in arr.reshape(-1)], dtype=np.int64).reshape(arr.shape)
    dtype = dtypes.int64 if arr.size and np.abs(arr).max() >= 2 ** 31 else dtypes.int32
    return constant(arr, dtype=dtype, name="shape")


def _shape_from_input(op) -> TensorShape:
    return constant_value_as_shape(op.inputs[0])


def _random_infer(op):
    out = _shape_from_input(op)
    check_output_size(op, out)
    return [(op.get_attr("dtype"), out)]


def _check_float(dtype, what: str = "dtype") -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype)
    if dtype not in FLOATS:
        raise TypeError(f"Value passed to parameter '{what}' has DataType {dtype.name} not in list of allowed "
                        "values: float16, bfloat16, float32, float64")
    return dtype


def _dims(node, shape) -> tuple:
    s = np.asarray(shape).reshape(-1)
    if not s.size:
        return ()
    if (s < 0).any():
        raise errors.InvalidArgumentError(node, node.name, f"Shape must be non-negative: {s.tolist()}")
    dims = tuple(int(d) for d in s)
    check_output_size(node, dims)
    return dims


# -- RandomStandardNormal / TruncatedNormal / RandomUniform ------------------------------------------
def _normal_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    if np_dt in (np.float32, np.float64):
        return lambda shape: rng.standard_normal(_dims(node, shape), dtype=np_dt)
    return lambda shape: rng.standard_normal(_dims(node, shape)).astype(np_dt)


def _truncated_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def draw(shape):
        dims = _dims(node, shape)
        out = rng.standard_normal(dims)
        bad = np.abs(out) > 2.0
        while bad.any():  # redraw beyond two standard deviations
            out[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(out) > 2.0
        return out.astype(np_dt, copy=False)
    return draw


def _uniform_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    if np_dt in (np.float32, np.float64):
        return lambda shape: uniform_in_parts(rng, _dims(node, shape), np_dt)
    below_one = np.nextafter(np_dt(1), np_dt(0))
    return lambda shape: np.minimum(rng.random(_dims(node, shape)).astype(np_dt), below_one)


def uniform_in_parts(rng: np.random.Generator, dims: tuple, dtype) -> np.ndarray:
    """rng.random(dims, dtype) for float32 or float64, the same numbers and the same state after,
    drawn in parts on the intra-op threads when large: PCG64 (default_rng's generator) can jump
    ahead (`advance`), so each part draws from a copy of the state moved to its first number.
    A float64 takes one 64-bit output, a float32 half of one (numpy keeps the other half for the
    next float32: the state's has_uint32), so parts start at whole outputs. Drawing 1.2M float32
    (a Keras Dropout's mask after the MNIST CNN's pooling) took 2.2 ms on one thread."""
    n = int(np.prod(dims))
    bits = rng.bit_generator
    if n < _DRAW_SPLIT_MIN or type(bits) is not np.random.PCG64:
        return rng.random(dims, dtype=dtype)
    out = np.empty(n, dtype)
    per = 2 if dtype == np.float32 else 1   # numbers per 64-bit output
    with bits.lock:
        state = bits.state
        first = 0
        if per == 2 and state["has_uint32"]:   # the kept half of the last output comes first
            out[0] = np.float32(state["uinteger"] >> 8) * np.float32(2.0 ** -24)   # (numpy's next_float)
            first = 1
        start = dict(state, has_uint32=0, uinteger=0) if per == 2 else state
        outputs = (n - first) // per
        last: list = []

        def draw(a: int, b: int) -> None:
            part = np.random.Generator(np.random.PCG64(0))   # (its state is set next: a seed costs less than entropy)
            part.bit_generator.state = start
            part.bit_generator.advance(a)
            stop = n if b == outputs else first + b * per   # (the last part draws an odd float32 too)
            part.random(stop - first - a * per, dtype=dtype, out=out[first + a * per:stop])
            if b == outputs:
                last.append(part.bit_generator.state)
        parallel_ranges(outputs, n, draw)
        bits.state = last[0]
    return out.reshape(dims)


_DRAW_SPLIT_MIN = 1 << 18   # numbers below which one thread draws them all (~0.5 ms)


def _uniform_int_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["Tout"]).as_numpy_dtype

    def draw(shape, lo, hi):
        if not lo < hi:
            raise errors.InvalidArgumentError(node, node.name, f"Need minval < maxval: {lo} >= {hi}")
        return rng.integers(lo, hi, size=_dims(node, shape), dtype=np_dt)
    return draw


# On a GPU the random ops draw on the host with their CPU kernels (the numbers do not depend on
# the device; the output moves to the GPU) from a shape in host memory, as TF's HostMemory("shape").
register("RandomStandardNormal", _random_infer, _normal_kernel, grad=None, stateful=True)
register_gpu("RandomStandardNormal", host_inputs=(0,))
register("TruncatedNormal", _random_infer, _truncated_kernel, grad=None, stateful=True)
register_gpu("TruncatedNormal", host_inputs=(0,))
register("RandomUniform", _random_infer, _uniform_kernel, grad=None, stateful=True)
register_gpu("RandomUniform", host_inputs=(0,))
def _uniform_int_infer(op):
    out = _shape_from_input(op)
    check_output_size(op, out)
    return [(op.get_attr("Tout"), out)]


register("RandomUniformInt", _uniform_int_infer, _uniform_int_kernel, grad=None, stateful=True)
register_gpu("RandomUniformInt", host_inputs=(0, 1, 2))     # minval and maxval are read on the host too


def _scaled(op_type, scope, shape, mean, stddev, dtype, seed, name):
    dtype = _check_float(dtype)
    g = get_default_graph()
    with g.name_scope(name or scope) as name:
        shape_t = _shape_tensor(shape)
        mean_t = convert_to_tensor(mean, dtype=dtype, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = make_op(op_type, [shape_t], {"dtype": dtype, **seed_attrs(seed)}, name=op_type).outputs[0]
        mul = rnd * stddev_t
        return add(mul, mean_t, name=name)


@tf_export("random.normal", "random_normal")
def random_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """tf.random_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None)."""
    return _scaled("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed, name)


@tf_export("random.truncated_normal", "truncated_normal")
def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """tf.truncated_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None): normal
    values more than two standard deviations from the mean are re-drawn."""
    return _scaled("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed, name)


@tf_export("random.uniform", "random_uniform")
def random_uniform(shape, minval=0, maxval=None, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """tf.random_uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None): values
    in [minval, maxval); integer dtypes need maxval."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in FLOATS + (dtypes.int32, dtypes.int64):
        raise ValueError(f"Invalid dtype {dtype!r}")
    if maxval is None:
        if dtype.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dtype!r}")
        maxval = 1
    g = get_default_graph()
    with g.name_scope(name or "random_uniform") as name:
        shape_t = _shape_tensor(shape)
        minval = convert_to_tensor(minval, dtype=dtype, name="min")
        maxval = convert_to_tensor(maxval, dtype=dtype, name="max")
        attrs = seed_attrs(seed)
        if dtype.is_integer:
            return make_op("RandomUniformInt", [shape_t, minval, maxval], {"Tout": dtype, "T": shape_t.dtype, **attrs},
                           name=name).outputs[0]
        rnd = make_op("RandomUniform", [shape_t], {"dtype": dtype, **attrs}, name="RandomUniform").outputs[0]
        return add(rnd * (maxval - minval), minval, name=name)


# -- RandomShuffle ----------------------------------------------------------------------------------
def _shuffle_kernel(node, ctx):
    rng = op_generator(node, ctx)
    return lambda value: rng.permutation(value) if np.ndim(value) else value


register("RandomShuffle", same_as_input(), _shuffle_kernel,
         grad=None, stateful=True)


@tf_export("random.shuffle", "random_shuffle")
def random_shuffle(value, seed=None, name=None) -> Tensor:
    """tf.random_shuffle(value, seed=None, name=None): `value` shuffled along its first dimension."""
    value = convert_to_tensor(value)
    return make_op("RandomShuffle", [value], {"T": value.dtype, **seed_attrs(seed)},
                   name=name or "RandomShuffle").outputs[0]


# -- Multinomial ----------------------------------------------------------------------------------
def _multinomial_infer(op):
    logits = op.inputs[0].shape
    if logits.ndims is not None and logits.ndims != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {logits.ndims}")
    n = constant_value(op.inputs[1])
    batch = logits[0].value if logits.ndims is not None else None
    out = [batch, None if n is None else int(n)]
    check_output_size(op, out)
    return [(op.get_attr("output_dtype"), TensorShape(out))]


def _multinomial_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["output_dtype"]).as_numpy_dtype

    def draw(logits, num_samples):
        logits = np.asarray(logits, dtype=np.float64)
        n = int(num_samples)
        if n < 0:
            raise errors.InvalidArgumentError(node, node.name, f"num_samples should be nonnegative, got {n}")
        if logits.ndim != 2:
            raise errors.InvalidArgumentError(node, node.name, "logits should be a matrix, got shape "
                                              f"{list(logits.shape)}")
        batch, classes = logits.shape
        check_output_size(node, [batch, n])
        out = np.empty((batch, n), dtype=np_dt)
        if batch == 0 or n == 0:
            return out
        if classes == 0:
            raise errors.InvalidArgumentError(node, node.name, "num_classes should be positive, got 0")
        m = np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        p = np.exp(logits - m)
        cdf = np.cumsum(p, axis=1)
        u = rng.random((batch, n)) * cdf[:, -1:]
        for b in range(batch):
            out[b] = np.minimum(np.searchsorted(cdf[b], u[b], side="right"), classes - 1)
        return out
    return draw


register("Multinomial", _multinomial_infer, _multinomial_kernel, grad=None, stateful=True)


@tf_export("random.multinomial", "multinomial")
def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None) -> Tensor:
    """tf.multinomial(logits, num_samples, seed=None, name=None, output_dtype=None): class indices
    [batch, num_samples] drawn from the categorical distributions given by rows of logits."""
    g = get_default_graph()
    with g.name_scope(name or "multinomial"):
        logits = convert_to_tensor(logits, name="logits")
        num = convert_to_tensor(num_samples, dtype=dtypes.int32)
        return make_op("Multinomial", [logits, num],
                       {"T": logits.dtype, "output_dtype": dtypes.as_dtype(output_dtype or dtypes.int64),
                       **seed_attrs(seed)}, name="Multinomial").outputs[0]


# -- RandomGamma / RandomPoissonV2 ------------------------------------------------------------------
def _param_infer(op):
    out = _shape_from_input(op).concatenate(op.inputs[1].shape)
    check_output_size(op, out)
    return [(op.get_attr("dtype") if "dtype" in op._attrs else op.inputs[1].dtype, out)]


def _gamma_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["T"]).as_numpy_dtype
    tiny = np.finfo(np_dt).tiny

    def draw(shape, alpha):
        alpha = np.asarray(alpha, dtype=np.float64)
        size = _dims(node, shape) + alpha.shape
        check_output_size(node, size)
        out = rng.gamma(alpha, size=size)
        return np.maximum(out, tiny).astype(np_dt)
    return draw


def _random_gamma_grad(op, grad):
    """d sample / d alpha by implicit differentiation (TF's RandomGamma gradient, Figurnov et al.
    2018): holding u = P(alpha, x) fixed, dx/dalpha = -(dP/dalpha) / density(x), summed over the
    sample dimensions. In float64: the density under- or overflows float32 in the tails."""
    shape_t, alpha = op.inputs
    n_sample_dims = size(shape_t)
    alpha = cast(reshape(alpha, concat([cast(ones_like(shape_t), dtypes.int32), shape_of(alpha)], 0)), dtypes.float64)
    x = cast(op.outputs[0], dtypes.float64)
    log_density = xlogy(alpha - 1., x) - x - lgamma(alpha)
    partial = cast(-igamma_grad_a(alpha, x) * exp(-log_density), grad.dtype)
    return [None, reduce_sum(grad * partial, axis=range_(n_sample_dims))]


register("RandomGamma", _param_infer, _gamma_kernel, grad=_random_gamma_grad, stateful=True)


@tf_export("random.gamma", "random_gamma")
def random_gamma(shape, alpha, beta=None, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """tf.random_gamma(shape, alpha, beta=None, dtype=float32, seed=None, name=None): samples of
    shape `shape + alpha.shape` from Gamma(alpha, beta) (beta is the inverse scale)."""
    dtype = _check_float(dtype)
    g = get_default_graph()
    with g.name_scope(name or "random_gamma"):
        shape_t = _shape_tensor(shape)
        alpha = convert_to_tensor(alpha, name="alpha", dtype=dtype)
        if beta is not None:   # alpha broadcast to beta's shape too, as TF's
            beta = convert_to_tensor(beta, name="beta", dtype=dtype)
            alpha = alpha + zeros_like(beta)
        out = make_op("RandomGamma", [shape_t, alpha], {"T": dtype, "S": shape_t.dtype, **seed_attrs(seed)},
                      name="RandomGamma").outputs[0]
        return out if beta is None else out / beta


def _poisson_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def draw(shape, lam):
        size = _dims(node, shape) + np.shape(lam)
        check_output_size(node, size)
        return rng.poisson(np.asarray(lam, dtype=np.float64), size=size).astype(np_dt)
    return draw


register("RandomPoissonV2", _param_infer, _poisson_kernel, grad=None, stateful=True)


@tf_export("random.poisson", "random_poisson")
def random_poisson(lam, shape, dtype=dtypes.float32, seed=None, name=None) -> Tensor:
    """tf.random_poisson(lam, shape, dtype=float32, seed=None, name=None): samples of shape
    `shape + lam.shape` from Poisson(lam)."""
    g = get_default_graph()
    with g.name_scope(name or "random_poisson"):
        shape_t = _shape_tensor(shape)
        lam = convert_to_tensor(lam, name="lam")
        return make_op("RandomPoissonV2", [shape_t, lam],
                       {"dtype": dtypes.as_dtype(dtype), "R": lam.dtype, "S": shape_t.dtype, **seed_attrs(seed)},
                       name="RandomPoissonV2").outputs[0]


# -- random_crop ----------------------------------------------------------------------------------
def _random_crop_infer(op):
    value = op.inputs[0]
    size = constant_value_as_shape(op.inputs[1])
    if value.shape.ndims is not None and size.ndims is None:
        size = TensorShape([None] * value.shape.ndims)
    return [(value.dtype, size), (dtypes.int64, TensorShape([value.shape.ndims]))]


def _random_crop_kernel(node, ctx):
    rng = op_generator(node, ctx)

    def run(value, size):
        value = np.asarray(value)
        size = np.reshape(size, -1).tolist()
        shape = value.shape
        if len(size) != len(shape) or any(n < 0 or n > d for n, d in zip(size, shape)):
            raise errors.InvalidArgumentError(node, node.name, f"Need value.shape >= size, got {list(shape)} {size}")
        offset = [int(u * (d - n + 1)) for u, d, n in zip(rng.random(len(shape)).tolist(), shape, size)]
        return value[tuple(slice(o, o + n) for o, n in zip(offset, size))], np.array(offset, dtype=np.int64)
    return run


def _random_crop_grad(op, grad, _):
    value, size = op.inputs
    offset = op.outputs[1]
    after = add(shape_of(value, out_type=dtypes.int64), -(make_op("Cast", [size], {"DstT": dtypes.int64}).outputs[0]
                                                         + offset))
    return [pad(grad, stack([offset, after], axis=1)), None]


register("RandomCrop", _random_crop_infer, _random_crop_kernel, grad=_random_crop_grad, stateful=True,
         dtypes={1: ("size", (dtypes.int32, dtypes.int64))})


@tf_export("image.random_crop", "random.crop", "random_crop")
def random_crop(value, size, seed=None, name=None) -> Tensor:
    """tf.random_crop(value, size, seed=None, name=None): a slice of `value` of shape `size` at a
    uniformly random offset (one draw per dimension); InvalidArgumentError when value is smaller."""
    g = get_default_graph()
    with g.name_scope(name or "random_crop") as name:
        value = convert_to_tensor(value, name="value")
        size = convert_to_tensor(size, dtype=dtypes.int32, name="size") if not isinstance(size, Tensor) else size
        return make_op("RandomCrop", [value, size], seed_attrs(seed), name=name).outputs[0]


# -- random orthogonal matrices (tf.orthogonal_initializer) -------------------------------------------
def random_orthogonal(shape, gain: float, dtype, seed=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal matrix, reshaped to `shape`."""
    g = get_default_graph()
    with g.name_scope("orthogonal"):
        shape_t = _shape_tensor(shape)
        return make_op("_RandomOrthogonal", [shape_t], {"dtype": dtypes.as_dtype(dtype), "gain": float(gain),
                                                        **seed_attrs(seed)}, name="RandomOrthogonal").outputs[0]


def _orthogonal_kernel(node, ctx):
    rng = op_generator(node, ctx)
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    gain = node.attr["gain"]

    def draw(shape):
        dims = _dims(node, shape)
        rows = int(np.prod(dims[:-1]))
        cols = dims[-1]
        a = rng.standard_normal((cols, rows) if rows < cols else (rows, cols))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (gain * q).reshape(dims).astype(np_dt)
    return draw


def _orthogonal_tf(op) -> list:
    """TF1's orthogonal_initializer: the signed Q of a normal matrix's QR, transposed when wider
    than tall, reshaped, times the gain. TF builds it for a static shape, as this needs."""
    dims = constant_value(op.inputs[0])
    if dims is None:
        raise ValueError(f"Operation '{op.name}' (an orthogonal initializer) has a shape that is not a constant: "
                         "TensorFlow's form of it needs a static shape")
    b, dtype, int32 = TFNodes(op), op.get_attr("dtype"), dtypes.int32
    rows, cols = int(np.prod(dims[:-1])), int(dims[-1])
    flat_shape = b.const("flat_shape", [max(rows, cols), min(rows, cols)], int32)
    normal = b.node("normal", "RandomStandardNormal", [flat_shape],
                    dtype=dtype, T=int32, seed=op.get_attr("seed"), seed2=op.get_attr("seed2"))
    qr = b.node("qr", "Qr", [normal], T=dtype, full_matrices=False)
    signs = b.node("signs", "Sign", [b.node("r_diagonal", "DiagPart", [qr + ":1"], T=dtype)], T=dtype)
    q = b.node("signed_q", "Mul", [qr, signs], T=dtype)
    if rows < cols:
        q = b.node("transposed_q", "Transpose", [q, b.const("perm", [1, 0], int32)], T=dtype, Tperm=int32)
    q = b.node("reshaped_q", "Reshape", [q, b.input(0)], T=dtype, Tshape=op.inputs[0].dtype)
    b.node(None, "Mul", [b.const("gain", op.get_attr("gain"), dtype), q], T=dtype)
    return b.nodes


register("_RandomOrthogonal", _random_infer, _orthogonal_kernel, grad=None, stateful=True, tf_lowering=_orthogonal_tf)


# -- stateless random ops (tf.random.stateless_*): TF's Philox4x32-10 streams ---------------------
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_U32 = np.uint64(0xFFFFFFFF)


def _philox_blocks(key, counter, n: int, skip=None) -> np.ndarray:
    """Philox4x32-10 (TF's random::PhiloxRandom): [n, 4] uint32 outputs for the 128-bit counters
    `counter` + i (i in 0..n-1, or the given `skip` offsets), under the 64-bit `key`."""
    offs = np.arange(n, dtype=np.uint64) if skip is None else np.asarray(skip, np.uint64)
    c = [np.uint64(v) for v in counter]
    lo = c[0] + offs  # 128-bit add of offs (< 2**64) to the counter, carried word by word
    words = [lo & _U32]
    carry = lo >> np.uint64(32)
    for w in c[1:]:
        s = w + carry
        words.append(s & _U32)
        carry = s >> np.uint64(32)
    c0, c1, c2, c3 = words
    k0, k1 = int(key[0]), int(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF, (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
        p0, p1 = _PHILOX_M[0] * c0, _PHILOX_M[1] * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _U32,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _U32)
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def _philox_key_counter(node, seed) -> tuple:
    """TF's GenerateKey: the [2] seed scrambled by one Philox round into the key and counter."""
    s = np.asarray(seed).reshape(-1)
    if s.size != 2:
        raise errors.InvalidArgumentError(node, node.name, f"seed must have shape [2], not {list(np.shape(seed))}")
    s0, s1 = (int(v) & 0xFFFFFFFFFFFFFFFF for v in s.astype(np.int64))
    mix = _philox_blocks((0x3EC8F720, 0x02461E29), (s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32), 1)[0]
    return (int(mix[0]), int(mix[1])), (0, 0, int(mix[2]), int(mix[3]))


def _uint32_stream(key, counter, n: int) -> np.ndarray:
    """The first n uint32s of the stream (four per counter step)."""
    return _philox_blocks(key, counter, -(-n // 4)).reshape(-1)[:n]


def _to_float(x: np.ndarray) -> np.ndarray:
    """TF's Uint32ToFloat: 23 random mantissa bits in [1, 2), minus 1."""
    return ((x & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1.0)


def _to_double(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """TF's Uint64ToDouble: 20 mantissa bits of `hi` and 32 of `lo` in [1, 2), minus 1."""
    man = ((hi.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32)) | lo.astype(np.uint64)
    return (man | np.uint64(1023 << 52)).view(np.float64) - 1.0


def _to_half(x: np.ndarray) -> np.ndarray:
    """TF's Uint16ToHalf: 10 mantissa bits of the low half-word in [1, 2), minus 1."""
    return ((x & np.uint32(0x3FF)) | np.uint32(15 << 10)).astype(np.uint16).view(np.float16) - np.float16(1.0)


def _libm(name: str, x: np.ndarray) -> np.ndarray:
    """The C library's `name` (log, sin, cos or their float forms) on each element: TF's Box-Muller
    calls these, and numpy's own vectorised ones differ from them in the last bit."""
    return c_function(name)(x).astype(x.dtype) if x.size else x.copy()


def _box_muller(x: np.ndarray, double: bool) -> np.ndarray:
    """TF's BoxMullerFloat/BoxMullerDouble on consecutive uint32s (two, or four for double, per
    pair of outputs): sin and cos of 2*pi*u2 times sqrt(-2 log u1), u1 at least 1e-7."""
    if double:
        q = x.reshape(-1, 4)
        u1, u2 = _to_double(q[:, 0], q[:, 1]), _to_double(q[:, 2], q[:, 3])
        u1 = np.maximum(u1, 1.0e-7)
        v1 = 2.0 * np.pi * u2
        r = np.sqrt(-2.0 * _libm("log", u1))
        return np.stack([_libm("sin", v1) * r, _libm("cos", v1) * r], axis=-1).reshape(-1)
    q = x.reshape(-1, 2)
    u1, u2 = _to_float(q[:, 0]), _to_float(q[:, 1])
    u1 = np.maximum(u1, np.float32(1.0e-7))
    v1 = (2.0 * np.pi * u2.astype(np.float64)).astype(np.float32)  # TF: float = 2.0f * M_PI (a double) * u2
    r = np.sqrt(np.float32(-2.0) * _libm("logf", u1))
    return np.stack([_libm("sinf", v1) * r, _libm("cosf", v1) * r], axis=-1).reshape(-1)


def _stateless_uniform(key, counter, n, np_dt) -> np.ndarray:
    if np_dt == np.float64:
        x = _uint32_stream(key, counter, 2 * n)
        return _to_double(x[0::2], x[1::2])
    x = _uint32_stream(key, counter, n)
    return _to_half(x) if np_dt == np.float16 else _to_float(x).astype(np_dt)


def _stateless_normal(key, counter, n, np_dt) -> np.ndarray:
    double = np_dt == np.float64
    # float: four outputs from each block of four uint32s; double: two
    per_block = 2 if double else 4
    blocks = -(-n // per_block)
    return _box_muller(_philox_blocks(key, counter, blocks).reshape(-1), double)[:n].astype(np_dt)


def _stateless_truncated(key, counter, n, np_dt) -> np.ndarray:
    """TF's TruncatedNormalDistribution: output groups of 4 (double: 2) values, group g drawing
    Box-Muller pairs from the stream at counter + g * 256 (double: 128) and keeping |z| < 2."""
    double = np_dt == np.float64
    group, stride = (2, 128) if double else (4, 256)
    groups = -(-n // group)
    out = np.empty((groups, group), np.float64 if double else np.float32)
    filled = np.zeros(groups, np.int64)
    start = np.arange(groups, dtype=np.uint64) * np.uint64(stride)
    step = 0
    pending = np.arange(groups)
    while pending.size:  # one Philox block per pending group and round: two (double: one) Box-Muller pairs
        z = _box_muller(_philox_blocks(key, counter, pending.size, skip=start[pending] + np.uint64(step))
                        .reshape(-1), double).reshape(pending.size, -1)
        for j in range(z.shape[1]):
            take = (np.abs(z[:, j]) < 2.0) & (filled[pending] < group)
            rows = pending[take]
            out[rows, filled[rows]] = z[take, j]
            filled[rows] += 1
        pending = pending[filled[pending] < group]
        step += 1
    return out.reshape(-1)[:n].astype(np_dt)


def _stateless_uniform_int(key, counter, n, np_dt, lo, hi) -> np.ndarray:
    """TF's UniformDistribution for ints: lo + (bits mod (hi - lo)), 32 bits (int64: 64) each."""
    span = int(hi) - int(lo)
    if np_dt == np.int64:
        x = _uint32_stream(key, counter, 2 * n).astype(np.uint64)
        bits = (x[1::2] << np.uint64(32)) | x[0::2]
        return (np.int64(lo) + (bits % np.uint64(span)).astype(np.int64)).astype(np_dt)
    x = _uint32_stream(key, counter, n)
    return (int(lo) + (x % np.uint32(span)).astype(np.int64)).astype(np_dt)


def _stateless_kernel(draw):
    def factory(node, ctx):
        np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

        def run(shape, seed, *args):
            dims = _dims(node, shape)
            key, counter = _philox_key_counter(node, seed)
            if args and not args[0] < args[1]:
                raise errors.InvalidArgumentError(node, node.name, f"Need minval < maxval: {args[0]} >= {args[1]}")
            return draw(key, counter, int(np.prod(dims)), np_dt, *args).reshape(dims)
        return run
    return factory


register("StatelessRandomUniform", _random_infer, _stateless_kernel(_stateless_uniform), grad=None)
register("StatelessRandomNormal", _random_infer, _stateless_kernel(_stateless_normal), grad=None)
register("StatelessTruncatedNormal", _random_infer, _stateless_kernel(_stateless_truncated), grad=None)
register("StatelessRandomUniformInt", _random_infer, _stateless_kernel(_stateless_uniform_int), grad=None)
# Philox on the host (TF's numbers on both devices); shape, seed and bounds in host memory.
register_gpu("StatelessRandomUniform", "StatelessRandomNormal", "StatelessTruncatedNormal", "StatelessRandomUniformInt",
             host_inputs=(0, 1, 2, 3))


def _stateless_seed(seed) -> Tensor:
    seed = convert_to_tensor(seed, name="seed")
    if seed.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"seed must be int32 or int64, got {seed.dtype.name}")
    if seed.shape.ndims is not None and seed.shape.as_list() not in ([2], [None]):
        raise ValueError(f"seed must have shape [2], got {seed.shape}")
    return seed


@tf_export("random.stateless_uniform")
def stateless_random_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.random.stateless_uniform(shape, seed, minval=0, maxval=None, dtype=tf.float32, name=None):
    uniform values in [minval, maxval) determined by the [2] int `seed` (same seed, same numbers)."""
    dtype = dtypes.as_dtype(dtype)
    if dtype.is_integer and maxval is None:
        raise ValueError("Must specify maxval for integer dtype")
    with get_default_graph().name_scope(name or "stateless_random_uniform") as scope:
        shape_t, seed = _shape_tensor(shape), _stateless_seed(seed)
        if dtype.is_integer:
            lo = convert_to_tensor(minval, dtype=dtype, name="min")
            hi = convert_to_tensor(maxval, dtype=dtype, name="max")
            return make_op("StatelessRandomUniformInt", [shape_t, seed, lo, hi], {"dtype": dtype},
                           name=scope).outputs[0]
        dtype = _check_float(dtype)
        rnd = make_op("StatelessRandomUniform", [shape_t, seed], {"dtype": dtype}).outputs[0]
        lo = convert_to_tensor(minval, dtype=dtype, name="min")
        hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
        return add(rnd * (hi - lo), lo, name=scope)


def _stateless_scaled(op_type, default_name, shape, seed, mean, stddev, dtype, name) -> Tensor:
    dtype = _check_float(dtype)
    with get_default_graph().name_scope(name or default_name) as scope:
        shape_t, seed = _shape_tensor(shape), _stateless_seed(seed)
        rnd = make_op(op_type, [shape_t, seed], {"dtype": dtype}).outputs[0]
        return add(rnd * convert_to_tensor(stddev, dtype=dtype, name="stddev"),
                   convert_to_tensor(mean, dtype=dtype, name="mean"), name=scope)


@tf_export("random.stateless_normal")
def stateless_random_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.random.stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=tf.float32, name=None):
    normal values determined by the [2] int `seed`."""
    return _stateless_scaled("StatelessRandomNormal", "stateless_random_normal", shape, seed, mean, stddev, dtype,
                             name)


@tf_export("random.stateless_truncated_normal")
def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.random.stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=tf.float32,
    name=None): normal values within two standard deviations, determined by `seed`."""
    return _stateless_scaled("StatelessTruncatedNormal", "stateless_truncated_normal", shape, seed, mean, stddev,
                             dtype, name)


def _stateless_multinomial_kernel(node, ctx):
    """TF's StatelessMultinomial: per row, the unnormalised CDF of exp(logit - max finite logit)
    over the finite logits, searched (upper bound) for uniform doubles times its total; the rows
    read one Philox stream in turn, two uint32s a sample (TF's numbers whenever TF runs the
    batch in one shard, as it does unless the batch is large)."""
    np_dt = dtypes.as_dtype(node.attr["output_dtype"]).as_numpy_dtype

    def run(logits, num_samples, seed):
        logits = np.asarray(logits)
        if logits.ndim != 2:
            raise errors.InvalidArgumentError(node, node.name, f"logits should be a matrix, got shape "
                                                               f"{list(logits.shape)}")
        batch, samples = logits.shape[0], int(num_samples)
        check_output_size(node, [batch, samples])
        key, counter = _philox_key_counter(node, seed)
        finite = np.isfinite(logits)
        top = np.max(np.where(finite, logits, np.finfo(logits.dtype).min), axis=1, keepdims=True)
        cdf = np.cumsum(np.where(finite, np.exp(logits.astype(np.float64) - top.astype(np.float64)), 0.0), axis=1)
        x = _uint32_stream(key, counter, 2 * batch * samples)
        u = _to_double(x[0::2], x[1::2]).reshape(batch, samples) * (cdf[:, -1:] if logits.shape[1] else 0.0)
        out = [np.searchsorted(cdf[b], u[b], side="right") for b in range(batch)]
        return np.asarray(out, np.int64).reshape(batch, samples).astype(np_dt)
    return run


register("StatelessMultinomial", lambda op: [(op.get_attr("output_dtype"), _multinomial_infer(op)[0][1])],
         _stateless_multinomial_kernel, grad=None)


@tf_export("random.stateless_multinomial")
def stateless_multinomial(logits, num_samples, seed, output_dtype=dtypes.int64, name=None) -> Tensor:
    """tf.random.stateless_multinomial(logits, num_samples, seed, output_dtype=tf.int64, name=None):
    class indices [batch, num_samples] drawn from softmax(logits), determined by `seed`."""
    with get_default_graph().name_scope(name or "stateless_multinomial") as scope:
        logits = convert_to_tensor(logits, name="logits")
        num = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
        return make_op("StatelessMultinomial", [logits, num, _stateless_seed(seed)],
                       {"output_dtype": dtypes.as_dtype(output_dtype)}, name=scope).outputs[0]


@tf_export("random.stateless_categorical")
def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None) -> Tensor:
    """tf.random.stateless_categorical(logits, num_samples, seed, dtype=tf.int64, name=None)."""
    return stateless_multinomial(logits, num_samples, seed, output_dtype=dtype, name=name or "stateless_categorical")


# -- stateless gamma, Poisson, binomial: TF's per-output Philox streams ------------------------------
class _Streams:
    """TF's per-output streams: its kernels Skip output i's generator to counter + stride * i, so
    the numbers do not depend on sharding. Each draw of a distribution takes the stream's next
    Philox block into a buffer of its two doubles, handed out last first (TF's SampleBuffer and
    UNIFORM macro)."""

    def __init__(self, key, counter, n: int, stride: int):
        self.key, self.counter = key, counter
        self.next = np.arange(n, dtype=np.uint64) * np.uint64(stride)
        self.buffers = {kind: (np.zeros((n, 2)), np.zeros(n, np.int64)) for kind in ("uniform", "normal")}

    def draw(self, kind: str, rows: np.ndarray) -> np.ndarray:
        """One double of `kind` ("uniform" in [0, 1) or "normal") for each output in `rows`."""
        values, remaining = self.buffers[kind]
        empty = rows[remaining[rows] == 0]
        if empty.size:
            blocks = _philox_blocks(self.key, self.counter, empty.size, skip=self.next[empty])
            self.next[empty] += np.uint64(1)
            if kind == "uniform":
                values[empty] = np.stack([_to_double(blocks[:, 0], blocks[:, 1]),
                                          _to_double(blocks[:, 2], blocks[:, 3])], axis=1)
            else:
                values[empty] = _box_muller(blocks.reshape(-1), True).reshape(-1, 2)
            remaining[empty] = 2
        remaining[rows] -= 1
        return values[rows, remaining[rows]]


def _per_sample_layout(flat: np.ndarray, num_params: int, dims: tuple) -> np.ndarray:
    """TF's kernels count outputs parameter-major (output i: parameter i // samples, sample
    i % samples) and store sample s of parameter p at s * num_params + p."""
    return flat.reshape(num_params, -1).T.reshape(dims)


def _gamma_draw(key, counter, alpha: np.ndarray, samples: int) -> np.ndarray:
    """TF's StatelessRandomGamma: exponential draws for alpha == 1, else Marsaglia and Tsang's
    transformation-rejection (alpha < 1 boosted by a uniform ** (1 / alpha)); doubles."""
    a = np.repeat(alpha.astype(np.float64), samples)
    streams = _Streams(key, counter, a.size, 256)
    out = np.empty(a.size)
    one = np.flatnonzero(a == 1.0)
    out[one] = -np.log1p(-streams.draw("uniform", one))
    d = a + np.where(a < 1, 2.0 / 3, -1.0 / 3)
    c = 1.0 / 3 / np.sqrt(d)
    pending = np.flatnonzero(a != 1.0)
    with np.errstate(all="ignore"):
        while pending.size:
            x = streams.draw("normal", pending)
            v = 1 + c[pending] * x
            ok = v > 0
            rows, x, v = pending[ok], x[ok], v[ok]
            v = v * v * v
            u = streams.draw("uniform", rows)
            dr = d[rows]
            accept = (u < 1 - 0.0331 * (x * x) * (x * x)) | \
                (_libm("log", u) < 0.5 * x * x + dr * (1 - v + _libm("log", v)))
            done, res = rows[accept], dr[accept] * v[accept]
            boost = a[done] < 1
            if boost.any():
                res[boost] *= np.power(streams.draw("uniform", done[boost]), 1 / a[done[boost]])
            out[done] = res
            pending = pending[~np.isin(pending, done)]
    return out


def _poisson_draw(key, counter, rate: np.ndarray, samples: int, highest: float) -> np.ndarray:
    """TF's Poisson sampler (doubles): Knuth's product of uniforms below rate 10, Hormann's
    transformed rejection above; a NaN rate gives NaN (TF's loop would not end)."""
    r = np.repeat(rate.astype(np.float64), samples)
    streams = _Streams(key, counter, r.size, 256)
    out = np.full(r.size, np.nan)
    rows = np.flatnonzero(r < 10)
    limit, prod, x = _libm("exp", -r), np.ones(r.size), np.zeros(r.size)
    while rows.size:
        prod[rows] *= streams.draw("uniform", rows)
        done = (prod[rows] <= limit[rows]) & (x[rows] <= highest)
        out[rows[done]] = x[rows[done]]
        rows = rows[~done]
        x[rows] += 1
    rows = np.flatnonzero(r >= 10)
    log_rate = _libm("log", r)
    b = 0.931 + 2.53 * np.sqrt(r)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    with np.errstate(all="ignore"):
        while rows.size:
            u = streams.draw("uniform", rows) - 0.5
            v = streams.draw("uniform", rows)
            ar, br, rr = a[rows], b[rows], r[rows]
            us = 0.5 - np.abs(u)
            k = np.floor((2 * ar / us + br) * u + rr + 0.43)
            fits = k <= highest
            quick = fits & (us >= 0.07) & (v <= 0.9277 - 3.6224 / (br - 2))
            test = fits & ~quick & ~((k < 0) | ((us < 0.013) & (v > us)))
            s = _libm("log", v * inv_alpha[rows] / (ar / (us * us) + br))
            t = -rr + k * log_rate[rows] - _libm("lgamma", k + 1)
            done = quick | (test & (s <= t))
            out[rows[done]] = k[done]
            rows = rows[~done]
    return out


_STIRLING_TAIL = np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                           0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                           0.00925546218271273, 0.00833056343336287])


def _stirling_tail(k: np.ndarray) -> np.ndarray:
    kp1sq = (k + 1) * (k + 1)
    far = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return np.where(k <= 9, _STIRLING_TAIL[np.clip(k, 0, 9).astype(np.int64)], far)


def _btrs(streams, rows, count, prob) -> np.ndarray:
    """TF's btrs (Hormann's transformed rejection for binomials) for each of `rows`."""
    out = np.empty(rows.size)
    stddev = np.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = np.floor((count + 1) * prob)
    pending = np.arange(rows.size)
    with np.errstate(all="ignore"):
        while pending.size:
            u = streams.draw("uniform", rows[pending])
            v = streams.draw("uniform", rows[pending])
            n, p_m, p_r = count[pending], m[pending], r[pending]
            u = u - 0.5
            us = 0.5 - np.abs(u)
            k = np.floor((2 * a[pending] / us + b[pending]) * u + c[pending])
            quick = (us >= 0.07) & (v <= v_r[pending])
            test = ~quick & ~((k < 0) | (k > n))
            v = _libm("log", v * alpha[pending] / (a[pending] / (us * us) + b[pending]))
            bound = ((p_m + 0.5) * _libm("log", (p_m + 1) / (p_r * (n - p_m + 1))) +
                     (n + 1) * _libm("log", (n - p_m + 1) / (n - k + 1)) +
                     (k + 0.5) * _libm("log", p_r * (n - k + 1) / (k + 1)) +
                     _stirling_tail(p_m) + _stirling_tail(n - p_m) - _stirling_tail(k) - _stirling_tail(n - k))
            done = quick | (test & (v <= bound))
            out[pending[done]] = k[done]
            pending = pending[~done]
    return out


def _binomial_inversion(streams, rows, count, prob) -> np.ndarray:
    """TF's binomial inversion: how many geometric(prob) gaps fit in count trials."""
    out, total = np.zeros(rows.size), np.zeros(rows.size)
    pending = np.arange(rows.size)
    step = _libm("log1p", -prob)
    with np.errstate(all="ignore"):
        while pending.size:
            total[pending] += np.ceil(_libm("log", streams.draw("uniform", rows[pending])) / step[pending])
            over = total[pending] > count[pending]
            out[pending[~over]] += 1
            pending = pending[~over]
    return out


def _binomial_draw(key, counter, counts: np.ndarray, probs: np.ndarray, samples: int) -> np.ndarray:
    """TF's RandomBinomialFunctor: 0 for count <= 0 or prob <= 0, count for prob >= 1, else by the
    smaller of prob and 1 - prob (counted as failures): btrs when count times it is at least 10
    (in the parameters' dtype, as TF), binomial inversion otherwise; NaN for a NaN prob."""
    t_dt = probs.dtype
    n = np.repeat(counts.astype(np.float64), samples)
    p = np.repeat(probs, samples)
    out = np.full(n.size, np.nan)
    out[(n <= 0) | (p <= 0)] = 0.0
    certain = (n > 0) & (p >= 1)
    out[certain] = n[certain]
    live = (n > 0) & (p > 0) & (p < 1)
    flip = p > t_dt.type(0.5)
    small = np.where(flip, t_dt.type(1) - p, p)           # TF: T q = T(1) - prob
    with np.errstate(all="ignore"):
        large = np.repeat(counts, samples).astype(t_dt) * small >= t_dt.type(10)
    for use_btrs, stride in ((True, 256), (False, 42)):
        rows = np.flatnonzero(live & (large == use_btrs))
        if not rows.size:
            continue
        streams = _Streams(key, counter, n.size, stride)
        q = small[rows].astype(np.float64)
        drawn = (_btrs if use_btrs else _binomial_inversion)(streams, rows, n[rows], q)
        out[rows] = np.where(flip[rows], n[rows] - drawn, drawn)
    return out


def _as_output(values: np.ndarray, np_dt) -> np.ndarray:
    """A double sample as TF's static_cast to the output dtype (to half through float, as Eigen)."""
    if np_dt == np.float16:
        return values.astype(np.float32).astype(np.float16)
    if np.dtype(np_dt).kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(values, nan=0.0).astype(np_dt)
    return values.astype(np_dt)


def _ends_with(node, dims: tuple, param_shape: tuple) -> None:
    if len(param_shape) > len(dims) or tuple(dims[len(dims) - len(param_shape):]) != tuple(param_shape):
        raise errors.InvalidArgumentError(node, node.name, f"Shape passed in must end with broadcasted shape: "
                                                           f"shape {list(dims)}, parameters' shape {list(param_shape)}")


def _stateless_gamma_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def run(shape, key, counter, alg, alpha):
        dims = _dims(node, shape)
        alpha = np.asarray(alpha)
        _ends_with(node, dims, alpha.shape)
        if not alpha.size:
            raise errors.InvalidArgumentError(node, node.name, "Input alpha should have non-zero element count, got: 0")
        if not int(np.prod(dims)):
            return np.zeros(dims, np_dt)
        flat = _gamma_draw(*_philox_words(node, key, counter, alg), alpha.reshape(-1), int(np.prod(dims)) // alpha.size)
        return _per_sample_layout(_as_output(flat, np_dt), alpha.size, dims)
    return run


def _stateless_poisson_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    highest = float(np.iinfo(np_dt).max if np.dtype(np_dt).kind in "iu" else np.finfo(np_dt).max)

    def run(shape, seed, lam):
        dims = _dims(node, shape)
        lam = np.asarray(lam)
        _ends_with(node, dims, lam.shape)
        key, counter = _philox_key_counter(node, seed)
        if not int(np.prod(dims)):
            return np.zeros(dims, np_dt)
        flat = _poisson_draw(key, counter, lam.reshape(-1), int(np.prod(dims)) // lam.size, highest)
        return _per_sample_layout(_as_output(flat, np_dt), lam.size, dims)
    return run


def _stateless_binomial_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

    def run(shape, seed, counts, probs):
        dims = _dims(node, shape)
        try:
            counts, probs = np.broadcast_arrays(np.asarray(counts), np.asarray(probs))
        except ValueError:
            raise errors.InvalidArgumentError(node, node.name, f"counts and probs must have compatible batch "
                                                               f"dimensions: {list(np.shape(counts))} vs. "
                                                               f"{list(np.shape(probs))}") from None
        _ends_with(node, dims, counts.shape)
        key, counter = _philox_key_counter(node, seed)
        if not int(np.prod(dims)):
            return np.zeros(dims, np_dt)
        flat = _binomial_draw(key, counter, counts.reshape(-1), probs.reshape(-1), int(np.prod(dims)) // counts.size)
        return _per_sample_layout(_as_output(flat, np_dt), counts.size, dims)
    return run


_MAX_ITERATIONS = 1000   # TF's kMaxIterations: consecutive rejections before a truncated normal sampler gives up


def _truncated_candidates(blocks: np.ndarray, method: str, norm_min, norm_max, diff, t) -> tuple:
    """One round of a TF truncated-normal sampler from its Philox blocks ([rounds, 1 or 2, 4]):
    (candidate values, accepted) [rounds, per round], all arithmetic in the dtype `t` as TF's."""
    double = t == np.float64
    exp, log = (("exp", "log") if double else ("expf", "logf"))

    def uniform(b):
        b = b.reshape(-1, 4)
        if double:
            return _to_double(b[:, 0::2].reshape(-1), b[:, 1::2].reshape(-1)).reshape(len(b), 2)
        return _to_float(b).astype(t)
    if method == "randn":
        z = _box_muller(blocks.reshape(-1), double).astype(t).reshape(len(blocks), -1)
        return z, (z >= norm_min) & (z <= norm_max)
    if method == "uniform":
        z = uniform(blocks[:, 0]) * diff + norm_min
        g = (t(0) if norm_min < 0 else norm_min * norm_min) - z * z
        return z, uniform(blocks[:, 1]) <= _libm(exp, (g / t(2.0)).astype(t))
    r = uniform(blocks[:, 0])                   # exponential: (r[0], r[1]), (r[2], r[3]) each a proposal
    alpha = (norm_min + np.sqrt(norm_min * norm_min + t(4))) / t(2)
    z = -_libm(log, r[:, 0::2]) / alpha + norm_min
    x = alpha - z if norm_min < alpha else np.full_like(z, norm_min - alpha)
    return z, (r[:, 1::2] <= _libm(exp, (-x * x / t(2.0)).astype(t))) & (z < norm_max)


def _truncated_batch(node, reader: list, need: int, mean, stddev, minval, maxval, t) -> np.ndarray:
    """TF's TruncatedNormalFunctorV2 for one batch member: `need` samples from the shared stream
    (reader: [key, counter, next block]), by normal rejection, uniform or exponential proposals."""
    with np.errstate(all="ignore"):
        if not (stddev > 0 and minval < maxval and (np.isfinite(minval) or np.isfinite(maxval))):
            raise errors.InvalidArgumentError(node, node.name, "Invalid parameters")
        if (np.isinf(minval) and minval < 0) or maxval < mean:
            minval, maxval, stddev = maxval, minval, -stddev
        norm_min, norm_max = (minval - mean) / stddev, (maxval - mean) / stddev
        root = np.sqrt(norm_min * norm_min + t(4))
        cutoff = t(2) * _libm("exp" if t == np.float64 else "expf", np.asarray(
            [t(0.5) + norm_min * (norm_min - root) / t(4)], t))[0] / (norm_min + root)
        diff = norm_max - norm_min
        inside = t(1.3)
        method = ("randn" if (norm_min < -inside and norm_max >= 0) or (norm_max > inside and norm_min <= 0) else
                  "uniform" if diff < cutoff else "exponential")
        per_round = 2 if method == "uniform" else 1
        limit = _MAX_ITERATIONS + (1 if method == "randn" else 0)
        taken, run, rounds = [], 0, 2 * need
        while True:
            key, counter, start = reader
            blocks = _philox_blocks(key, counter, rounds * per_round,
                                    skip=np.arange(start, start + rounds * per_round, dtype=np.uint64))
            z, ok = _truncated_candidates(blocks.reshape(rounds, per_round, 4), method, norm_min, norm_max, diff, t)
            hits = np.flatnonzero(ok.reshape(-1))
            gaps = np.diff(np.concatenate([[-1 - run], hits])) - 1
            if (gaps >= limit).any():
                raise errors.InternalError(node, node.name, f"TruncatedNormal {method} rejection sampler failed to "
                                                            f"accept a sample.")
            hits = hits[:need - len(taken)]
            taken.extend(z.reshape(-1)[hits])
            if len(taken) == need:
                reader[2] = start + (hits[-1] // z.shape[1] + 1) * per_round
                return (np.asarray(taken, t) * stddev + mean).astype(t)
            run = z.size - 1 - (hits[-1] if hits.size else -1 - run)
            reader[2] = start + rounds * per_round


def _stateless_truncated_kernel(node, ctx):
    np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    t = np.float32 if np_dt == np.float16 else np_dt   # half: float arithmetic (TF rounds each step to half)

    def run(shape, seed, *params):
        dims = _dims(node, shape)
        try:
            params = np.broadcast_arrays(*(np.asarray(p, t) for p in params))
        except ValueError:
            raise errors.InvalidArgumentError(node, node.name, "means, stddevs, minvals, maxvals must have compatible "
                                                               "batch dimensions: " + " vs. ".join(
                                                                   str(list(np.shape(p))) for p in params)) from None
        _ends_with(node, dims, params[0].shape)
        key, counter = _philox_key_counter(node, seed)
        batches = params[0].size
        out = np.empty((int(np.prod(dims)) // max(batches, 1), batches), t)
        reader = [key, counter, 0]   # one stream through every batch member: TF's numbers while TF runs one shard
        for b, (mean, stddev, lo, hi) in enumerate(zip(*(p.reshape(-1) for p in params))):
            if out.shape[0]:
                out[:, b] = _truncated_batch(node, reader, out.shape[0], mean, stddev, lo, hi, t)
        return out.astype(np_dt).reshape(dims)
    return run


register("StatelessParameterizedTruncatedNormal", _random_infer, _stateless_truncated_kernel, grad=None)
register("StatelessRandomGammaV3", _random_infer, _stateless_gamma_kernel, grad=None)
register("StatelessRandomPoisson", _random_infer, _stateless_poisson_kernel, grad=None)
register("StatelessRandomBinomial", _random_infer, _stateless_binomial_kernel, grad=None)


@tf_export("random.stateless_gamma")
def stateless_random_gamma(shape, seed, alpha, beta=None, dtype=dtypes.float32, name=None) -> Tensor:
    """tf.random.stateless_gamma(shape, seed, alpha, beta=None, dtype=tf.float32, name=None):
    Gamma(alpha, beta) samples (beta the inverse scale; both broadcast to the trailing
    dimensions of `shape`), determined by the [2] int `seed`: TF's numbers."""
    dtype = _check_float(dtype)
    with get_default_graph().name_scope(name or "stateless_random_gamma"):
        shape_t = _shape_tensor(shape)
        alpha = convert_to_tensor(alpha, dtype=dtype, name="alpha")
        beta = convert_to_tensor(1 if beta is None else beta, dtype=dtype, name="beta")
        alpha = broadcast_to(alpha, broadcast_dynamic_shape(shape_of(alpha), shape_of(beta)))
        key, counter = _seed_key_counter(seed)
        alg = convert_to_tensor(RNG_ALG_AUTO_SELECT, dtype=dtypes.int32, name="alg")
        rnd = make_op("StatelessRandomGammaV3", [shape_t, key, counter, alg, alpha],
                      {"dtype": dtype, "shape_dtype": shape_t.dtype}, name="StatelessRandomGammaV3").outputs[0]
        return maximum(np.finfo(dtype.as_numpy_dtype).tiny, rnd / beta)


@tf_export("random.stateless_poisson")
def stateless_random_poisson(shape, seed, lam, dtype=dtypes.int32, name=None) -> Tensor:
    """tf.random.stateless_poisson(shape, seed, lam, dtype=tf.int32, name=None): Poisson(lam)
    samples (lam broadcast to the trailing dimensions of `shape`), determined by `seed`: TF's
    numbers."""
    with get_default_graph().name_scope(name or "stateless_random_poisson") as scope:
        shape_t, seed = _shape_tensor(shape), _stateless_seed(seed)
        lam = convert_to_tensor(lam, name="lam")
        return make_op("StatelessRandomPoisson", [shape_t, seed, lam], {"dtype": dtypes.as_dtype(dtype)},
                       name=scope).outputs[0]


@tf_export("random.stateless_binomial")
def stateless_random_binomial(shape, seed, counts, probs, output_dtype=dtypes.int32, name=None) -> Tensor:
    """tf.random.stateless_binomial(shape, seed, counts, probs, output_dtype=tf.int32, name=None):
    the number of successes in `counts` trials of probability `probs` (broadcast together, to
    the trailing dimensions of `shape`), determined by `seed`: TF's numbers."""
    with get_default_graph().name_scope(name or "stateless_random_binomial") as scope:
        shape_t, seed = _shape_tensor(shape), _stateless_seed(seed)
        probs = convert_to_tensor(probs, preferred_dtype=dtypes.float32, name="probs")
        counts = convert_to_tensor(counts, dtype=probs.dtype, name="counts")
        return make_op("StatelessRandomBinomial", [shape_t, seed, counts, probs],
                       {"dtype": dtypes.as_dtype(output_dtype)}, name=scope).outputs[0]


@tf_export("random.stateless_parameterized_truncated_normal")
def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0, minvals=-2.0, maxvals=2.0,
                                             name=None) -> Tensor:
    """tf.random.stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0,
    minvals=-2.0, maxvals=2.0, name=None): normal values of each mean and standard deviation
    truncated to [minval, maxval] (the four broadcast to the trailing dimensions of `shape`),
    determined by `seed`: TF's numbers for float32 and float64 whenever TF samples in one shard,
    as it does for small outputs (a larger one TF splits among its threads, each from its own
    offset in the stream)."""
    with get_default_graph().name_scope(name or "stateless_parameterized_truncated_normal") as scope:
        shape_t, seed = _shape_tensor(shape), _stateless_seed(seed)
        params = [convert_to_tensor(v, name=n) for v, n in ((means, "means"), (stddevs, "stddevs"),
                                                             (minvals, "minvals"), (maxvals, "maxvals"))]
        return make_op("StatelessParameterizedTruncatedNormal", [shape_t, seed, *params],
                       {"dtype": params[0].dtype}, name=scope).outputs[0]

# -- the V2 stateless ops: an explicit Philox key and counter (what tf.random.Generator draws with) --
RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT = 1, 3   # TF's Algorithm ids; auto_select is Philox on CPU


def _philox_words(node, key, counter, alg) -> tuple:
    """A V2 op's uint64 key [1] and counter [2] as Philox's 32-bit key and counter words."""
    if int(alg) not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
        raise errors.InvalidArgumentError(node, node.name, f"Unsupported algorithm id: {int(alg)}")
    k, c = np.asarray(key).reshape(-1), np.asarray(counter).reshape(-1)
    if k.size != 1 or c.size != 2:
        raise errors.InvalidArgumentError(node, node.name, f"key must have 1 element and counter 2 for Philox, "
                                                           f"got {k.size} and {c.size}")
    k, c0, c1 = (int(v) & 0xFFFFFFFFFFFFFFFF for v in (k[0], c[0], c[1]))
    return (k & 0xFFFFFFFF, k >> 32), (c0 & 0xFFFFFFFF, c0 >> 32, c1 & 0xFFFFFFFF, c1 >> 32)


def _stateless_full_int(key, counter, n, np_dt) -> np.ndarray:
    """TF's UniformFullIntDistribution: the raw 32 bits, or for 64-bit types two uint32s, the first low."""
    if np.dtype(np_dt).itemsize == 8:
        x = _uint32_stream(key, counter, 2 * n).astype(np.uint64)
        return ((x[1::2] << np.uint64(32)) | x[0::2]).view(np_dt)
    return _uint32_stream(key, counter, n).view(np_dt)


def _stateless_v2_kernel(draw):
    def factory(node, ctx):
        np_dt = dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype

        def run(shape, key, counter, alg, *bounds):
            dims = _dims(node, shape)
            if bounds and not bounds[0] < bounds[1]:
                raise errors.InvalidArgumentError(node, node.name, f"Need minval < maxval: {bounds[0]} >= {bounds[1]}")
            return draw(*_philox_words(node, key, counter, alg), int(np.prod(dims)), np_dt, *bounds).reshape(dims)
        return run
    return factory


for _op_type, _draw in (("StatelessRandomUniformV2", _stateless_uniform),
                        ("StatelessRandomNormalV2", _stateless_normal),
                        ("StatelessTruncatedNormalV2", _stateless_truncated),
                        ("StatelessRandomUniformIntV2", _stateless_uniform_int),
                        ("StatelessRandomUniformFullIntV2", _stateless_full_int)):
    register(_op_type, _random_infer, _stateless_v2_kernel(_draw), grad=None)
    register_gpu(_op_type, host_inputs=(0, 1, 2, 3, 4, 5))


def stateless_v2(op_type: str, shape, key, counter, alg, dtype, bounds=(), name=None) -> Tensor:
    """One of the StatelessRandom*V2 ops: `shape`'s values of `dtype` from Philox's (key, counter)."""
    inputs = [_shape_tensor(shape), key, counter, convert_to_tensor(alg, dtype=dtypes.int32, name="alg"), *bounds]
    return make_op(op_type, inputs, {"dtype": dtypes.as_dtype(dtype)}, name=name or op_type).outputs[0]


def _get_key_counter_kernel(node, ctx):
    def run(seed):
        key, counter = _philox_key_counter(node, seed)
        return (np.asarray([key[0] | key[1] << 32], np.uint64),
                np.asarray([counter[0] | counter[1] << 32, counter[2] | counter[3] << 32], np.uint64))
    return run


register("StatelessRandomGetKeyCounter",
         lambda op: [(dtypes.uint64, TensorShape([1])), (dtypes.uint64, TensorShape([2]))],
         _get_key_counter_kernel, grad=None)


def _seed_key_counter(seed) -> tuple:
    op = make_op("StatelessRandomGetKeyCounter", [_stateless_seed(seed)], {}, name="StatelessRandomGetKeyCounter")
    return op.outputs[0], op.outputs[1]


@tf_export("random.experimental.stateless_split", "random.split")
def split(seed, num=2, alg="auto_select", name=None) -> Tensor:
    """tf.random.split(seed, num=2, alg='auto_select'): `num` new [2] seeds (a [num, 2] tensor of
    seed's dtype) drawn from `seed`, for stateless random ops."""
    with get_default_graph().name_scope(name or "split"):
        seed = _stateless_seed(seed)
        key, counter = _seed_key_counter(seed)
        return stateless_v2("StatelessRandomUniformFullIntV2", [num, 2], key, counter, algorithm_id(alg), seed.dtype)


@tf_export("random.experimental.stateless_fold_in", "random.fold_in")
def fold_in(seed, data, alg="auto_select", name=None) -> Tensor:
    """tf.random.fold_in(seed, data, alg='auto_select'): a new [2] seed combining `seed` with the
    integer `data` ([a draw from seed, data], of data's dtype)."""
    with get_default_graph().name_scope(name or "fold_in"):
        data = convert_to_tensor(data, name="data")
        key, counter = _seed_key_counter(seed)
        drawn = stateless_v2("StatelessRandomUniformFullIntV2", [], key, counter, algorithm_id(alg), data.dtype)
        return stack([drawn, data])


_ALGORITHMS = {"philox": RNG_ALG_PHILOX, "auto_select": RNG_ALG_AUTO_SELECT, "threefry": 2}


def algorithm_id(alg) -> int:
    """TF's convert_alg_to_int: an Algorithm, its name or its id, as the id; ThreeFry is not here."""
    alg = getattr(alg, "value", alg)
    if isinstance(alg, str):
        if alg.lower() not in _ALGORITHMS:
            raise ValueError(f"Unknown algorithm name: {alg}")
        alg = _ALGORITHMS[alg.lower()]
    if alg not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
        raise ValueError(f"Algorithm {alg} is not supported: tensorweave's RNGs are Philox (1) or auto_select (3)")
    return int(alg)

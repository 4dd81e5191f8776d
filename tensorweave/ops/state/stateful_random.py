"""tf.random.experimental.Generator (TF 1.15's stateful RNG API, TF 2's tf.random.Generator): a
Philox state [counter low, counter high, key] held in an int64 variable. Each draw is
RngReadAndSkip (read the state, advance the counter by 256 per output element) followed by
the StatelessRandom*V2 op of that (key, counter), as TF builds it, so a Generator of a given
state draws TF's numbers bit for bit; in a graph each session.run of a draw advances the state."""
from __future__ import annotations

import enum
import os

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.graph import Tensor, get_default_graph
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.array.concat import concat
from tensorweave.ops.array.core import constant, reshape
from tensorweave.ops.array.slicing import strided_slice
from tensorweave.ops.helpers import make_op
from tensorweave.ops.math.binary import add
from tensorweave.ops.math.cast import bitcast, cast
from tensorweave.ops.math.reduction import reduce_prod
from tensorweave.ops.random import RNG_ALG_AUTO_SELECT, RNG_ALG_PHILOX, _shape_tensor, algorithm_id, stateless_v2
from tensorweave.ops.registry import register
from tensorweave.ops.state.variable_ops import check_handle, colocated_with_handle
from tensorweave.ops.state.variables import Variable

_STATE_SIZE = 3          # Philox: a 128-bit counter and a 64-bit key, as int64s
_COUNTER_SKIP = 256      # TF's counter increase per output element (FillPhiloxRandom's 256 per group)
_U64 = (1 << 64) - 1


@tf_export("random.Algorithm", "random.experimental.Algorithm")
class Algorithm(enum.Enum):
    """tf.random.Algorithm: the RNG algorithms (tensorweave runs Philox; AUTO_SELECT is Philox)."""
    PHILOX = RNG_ALG_PHILOX
    THREEFRY = 2
    AUTO_SELECT = RNG_ALG_AUTO_SELECT


# -- RngReadAndSkip ---------------------------------------------------------------------------------
def _read_and_skip_kernel(node, ctx):
    def run(res, alg, delta):
        if int(alg) not in (RNG_ALG_PHILOX, RNG_ALG_AUTO_SELECT):
            raise errors.InvalidArgumentError(node, node.name, f"Unsupported algorithm id: {int(alg)}")
        with res.lock:
            state = np.asarray(res.read(node.name))
            if state.shape != (_STATE_SIZE,):
                raise errors.InvalidArgumentError(
                    node, node.name, f"The RNG state must have shape [{_STATE_SIZE}] for Philox, got "
                    f"{list(state.shape)}")
            words = [int(v) & _U64 for v in state]
            counter = (words[0] | words[1] << 64) + int(delta) * _COUNTER_SKIP
            new = [counter & _U64, (counter >> 64) & _U64, words[2]]
            res.store(np.asarray(new, np.uint64).view(np.int64))
        return state.copy()
    return run


def _read_and_skip_infer(op):
    check_handle(op, dtypes.int64)
    return [(dtypes.int64, TensorShape([_STATE_SIZE]))]


register("RngReadAndSkip", _read_and_skip_infer, _read_and_skip_kernel, grad=None, stateful=True)


# -- states -----------------------------------------------------------------------------------------
def _state_from_seed(seed) -> list:
    """TF's _make_1d_state: a Python int chopped into 64-bit words, low first (the counter), zero-padded;
    a list of ints taken as the words."""
    if isinstance(seed, (int, np.integer)):
        seed, words = int(seed), []
        for _ in range(_STATE_SIZE):
            words.append(seed & _U64)
            seed >>= 64
        seed = words
    words = [int(v) & _U64 for v in np.asarray(seed, dtype=object).reshape(-1)][:_STATE_SIZE]
    words = [0] * (_STATE_SIZE - len(words)) + words   # TF pads on the left
    return np.asarray(words, np.uint64).view(np.int64).tolist()


def _ints(values) -> list:
    """Python ints of a number or nested list, uint64 ones too (numpy would make them floats)."""
    return list(np.asarray(values, dtype=object).reshape(-1))


@tf_export("random.create_rng_state", "random.experimental.create_rng_state")
def create_rng_state(seed, alg):
    """tf.random.create_rng_state(seed, alg): the int64 RNG state (a numpy array of 3 for Philox) a
    Generator.from_seed(seed, alg) starts from."""
    algorithm_id(alg)
    return np.asarray(_state_from_seed(seed), np.int64)


@tf_export("random.Generator", "random.experimental.Generator")
class Generator:
    """tf.random.experimental.Generator(copy_from=None, state=None, alg=None): a random number
    generator whose state lives in a variable (`state`), so each op drawing from it advances it.
    Build one with from_seed, from_state, from_key_counter or from_non_deterministic_state; in a
    graph, run its variable's initializer (tf.global_variables_initializer) before drawing."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("When `copy_from` is not None, `state` and `alg` must be None.")
            state, alg = copy_from.state.initialized_value(), copy_from.algorithm
        elif state is None or alg is None:
            raise ValueError("`state` and `alg` must be given when `copy_from` is None.")
        self._alg = algorithm_id(alg)
        if not isinstance(state, Tensor) and not hasattr(state, "_as_graph_element"):
            state = _state_from_seed(state) if np.ndim(state) else _state_from_seed([state])
        self._state_var = Variable(state, dtype=dtypes.int64, trainable=False)
        self._state_var.get_shape().assert_is_compatible_with([_STATE_SIZE])

    @classmethod
    def from_state(cls, state, alg):
        """A generator starting from `state` (3 int64s for Philox)."""
        return cls(state=state, alg=alg)

    @classmethod
    def from_seed(cls, seed, alg=None):
        """A generator whose state is create_rng_state(seed, alg) (Philox by default)."""
        alg = RNG_ALG_PHILOX if alg is None else alg
        return cls(state=create_rng_state(seed, alg), alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        """A generator of a state drawn from the operating system's entropy."""
        words = np.frombuffer(os.urandom(8 * _STATE_SIZE), np.int64)
        return cls(state=words.tolist(), alg=RNG_ALG_PHILOX if alg is None else alg)

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        """A generator of Philox `key` (an int) and `counter` (two ints, low first)."""
        return cls(state=_state_from_seed(_ints(counter) + [key]), alg=alg)

    state = property(lambda self: self._state_var, doc="The variable holding the state.")
    algorithm = property(lambda self: self._alg, doc="The algorithm id (1: Philox).")

    @property
    def key(self) -> Tensor:
        """The key part of the state (its last element)."""
        return strided_slice(self._state_var.value(), [_STATE_SIZE - 1], [_STATE_SIZE], [1], shrink_axis_mask=1)

    def reset(self, state):
        """An op setting the state to `state` (TF returns nothing; in a graph run this op)."""
        state = convert_to_tensor(state, dtype=dtypes.int64) if isinstance(state, Tensor) else _state_from_seed(state)
        return self._state_var.assign(state, read_value=False)

    def reset_from_seed(self, seed):
        """An op setting the state to create_rng_state(seed)."""
        return self.reset(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter):
        """An op setting the state to Philox `key` and `counter`."""
        return self.reset(_ints(counter) + [key])

    def skip(self, delta):
        """Advances the counter as `delta` draws would; returns the state before (RngReadAndSkip)."""
        handle = self._state_var.handle
        with colocated_with_handle(handle):
            return make_op("RngReadAndSkip", [handle, cast(self._alg, dtypes.int32), cast(delta, dtypes.uint64)],
                           {}, name="RngReadAndSkip").outputs[0]

    def _key_counter(self, shape: Tensor) -> tuple:
        old = self.skip(reduce_prod(shape))
        counter = bitcast(strided_slice(old, [0], [2], [1]), dtypes.uint64)
        key = bitcast(strided_slice(old, [2], [3], [1]), dtypes.uint64)
        return key, counter

    def _draw(self, op_type, shape, dtype, bounds=(), name=None) -> Tensor:
        shape = _shape_tensor(shape)
        key, counter = self._key_counter(shape)
        return stateless_v2(op_type, shape, key, counter, self._alg, dtype, bounds, name=name)

    def _scaled(self, op_type, default_name, shape, loc, scale, dtype, name) -> Tensor:
        dtype = dtypes.as_dtype(dtype)
        with get_default_graph().name_scope(name or default_name) as scope:
            loc_t = convert_to_tensor(loc, dtype=dtype, name="mean")
            scale_t = convert_to_tensor(scale, dtype=dtype, name="stddev")
            return add(self._draw(op_type, shape, dtype) * scale_t, loc_t, name=scope)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None) -> Tensor:
        """Normal values of `shape`."""
        return self._scaled("StatelessRandomNormalV2", "stateful_normal", shape, mean, stddev, dtype, name)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None) -> Tensor:
        """Normal values within two standard deviations of `mean`."""
        return self._scaled("StatelessTruncatedNormalV2", "truncated_normal", shape, mean, stddev, dtype, name)

    def uniform(self, shape, minval=0, maxval=None, dtype=dtypes.float32, name=None) -> Tensor:
        """Uniform values in [minval, maxval) ([0, 1) for floats by default); integers need both
        bounds, or neither for the full range."""
        dtype = dtypes.as_dtype(dtype)
        if dtype.is_integer and (minval is None) != (maxval is None):
            raise ValueError(f"For integer dtype {dtype}, minval and maxval must be both `None` or both non-`None`; "
                             f"got minval={minval} and maxval={maxval}")
        with get_default_graph().name_scope(name or "stateful_uniform") as scope:
            if dtype.is_integer and minval is None:
                return self._draw("StatelessRandomUniformFullIntV2", shape, dtype, name=scope)
            lo = convert_to_tensor(minval, dtype=dtype, name="min")
            hi = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype, name="max")
            if dtype.is_integer:
                return self._draw("StatelessRandomUniformIntV2", shape, dtype, (lo, hi), name=scope)
            return add(self._draw("StatelessRandomUniformV2", shape, dtype) * (hi - lo), lo, name=scope)

    def uniform_full_int(self, shape, dtype=dtypes.uint64, name=None) -> Tensor:
        """Integers over the whole range of `dtype`."""
        with get_default_graph().name_scope(name or "stateful_uniform_full_int") as scope:
            return self._draw("StatelessRandomUniformFullIntV2", shape, dtype, name=scope)

    def make_seeds(self, count=1) -> Tensor:
        """A [2, count] int64 tensor: `count` seeds for the stateless random ops (column i)."""
        keys = self.uniform_full_int([count], dtype=dtypes.int64)
        return concat([reshape(keys, [1, count]), constant(np.zeros([1, count], np.int64))], 0)

    def split(self, count=1) -> list:
        """`count` new generators of states [0, 0, key] for keys drawn from this one. Their
        initial values draw from this generator: initialize it first (the draw advances it)."""
        keys = self.uniform_full_int([count], dtype=dtypes.int64)
        return [Generator(state=concat([constant(np.zeros([_STATE_SIZE - 1], np.int64)),
                                        strided_slice(keys, [i], [i + 1], [1])], 0), alg=self._alg)
                for i in range(count)]


_global_generator = None


@tf_export("random.get_global_generator", "random.experimental.get_global_generator")
def get_global_generator() -> Generator:
    """tf.random.experimental.get_global_generator(): the process's generator (of a nondeterministic
    state, created on first use in the default graph, and again for a new default graph)."""
    global _global_generator
    if _global_generator is None or _global_generator.state.graph is not get_default_graph():
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


@tf_export("random.set_global_generator", "random.experimental.set_global_generator")
def set_global_generator(generator: Generator) -> None:
    """tf.random.experimental.set_global_generator(generator): replaces the global generator."""
    global _global_generator
    _global_generator = generator

"""Candidate samplers (TF's candidate_sampling_ops): uniform, log-uniform (Zipfian), learned
unigram, fixed unigram (from a vocabulary file or a list of counts) and all-classes samplers,
and compute_accidental_hits. Each sampler op draws `num_sampled` classes from [0, range_max)
(distinct ones when `unique`) and returns them with the expected number of times each true and
each sampled class would be drawn, as the sampled losses (sampled.py) need."""
from __future__ import annotations

import collections
import math
from typing import Optional

import numpy as np

from tensorweave.framework import dtypes
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import invalid, make_op
from tensorweave.ops.random import op_generator, seed_attrs
from tensorweave.ops.registry import register


CandidateSamplerOutput = collections.namedtuple("CandidateSamplerOutput", ["sampled_candidates",
                                                                           "true_expected_count",
                                                                           "sampled_expected_count"])
_STATE_CONTAINER = "_candidate_samplers"


# -- distributions ---------------------------------------------------------------------------------
class _Distribution:
    """P(class) in proportion to `weights` over [0, range_max), and sampling from it; `update`
    learns from the true classes of a batch (learned unigram only)."""

    def __init__(self, weights: np.ndarray):
        self.weights = weights
        self._cdf: Optional[np.ndarray] = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self._cdf is None:
            self._cdf = np.cumsum(self.weights)
        u = rng.random(n) * self._cdf[-1]
        return np.minimum(np.searchsorted(self._cdf, u, side="right"), len(self.weights) - 1)

    def probability(self, classes: np.ndarray) -> np.ndarray:
        if self._cdf is None:
            self._cdf = np.cumsum(self.weights)
        return self.weights[classes] / self._cdf[-1]

    def update(self, true_classes: np.ndarray) -> None:
        pass


class _LogUniform(_Distribution):
    """P(c) = log((c + 2) / (c + 1)) / log(range_max + 1): Zipf-like, for classes sorted by
    decreasing frequency."""

    def __init__(self, range_max: int):
        self.range_max = range_max
        self.log_range = math.log(range_max + 1)

    def sample(self, rng, n):
        return np.minimum((np.exp(rng.random(n) * self.log_range) - 1).astype(np.int64), self.range_max - 1)

    def probability(self, classes):
        c = np.asarray(classes, np.float64)
        return np.log((c + 2.0) / (c + 1.0)) / self.log_range


class _Uniform(_Distribution):
    def __init__(self, range_max: int):
        self.range_max = range_max

    def sample(self, rng, n):
        return rng.integers(0, self.range_max, size=n)

    def probability(self, classes):
        return np.full(np.shape(classes), 1.0 / self.range_max)


class _LearnedUnigram(_Distribution):
    """Counts of the true classes seen so far, each class starting at 1 (TF's learned unigram)."""

    def __init__(self, range_max: int):
        super().__init__(np.ones(range_max))

    def update(self, true_classes):
        np.add.at(self.weights, np.asarray(true_classes).reshape(-1), 1.0)
        self._cdf = None


def _expected_count(p: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    """The expected number of times a class of probability p appears among the draws: p * n for
    n independent draws; 1 - (1 - p)^tries when the draws were retried until n were distinct."""
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-np.minimum(p, 1.0)))


def _sampler_kernel(make_distribution):
    def factory(node, ctx):
        rng = op_generator(node, ctx)
        num_sampled, unique = int(node.attr["num_sampled"]), bool(node.attr["unique"])
        range_max = int(node.attr["range_max"])
        num_true = int(node.attr["num_true"])
        key = f"{node.name}/{node.op}"
        dist = ctx.resources.lookup_or_create(_STATE_CONTAINER, key, lambda: make_distribution(node, range_max))

        def run(true_classes):
            true_classes = np.asarray(true_classes, np.int64)
            if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
                raise invalid(node, f"true_classes must be a matrix with num_true = {num_true} columns, got shape "
                                    f"{list(true_classes.shape)}")
            if unique and num_sampled > range_max:
                raise invalid(node, f"Sampler's range is too small: range_max = {range_max} < num_sampled = "
                                    f"{num_sampled} with unique=True")
            if unique:
                picked: list = []
                seen: set = set()
                tries = 0
                while len(picked) < num_sampled:
                    for c in dist.sample(rng, max(2 * (num_sampled - len(picked)), 8)).tolist():
                        tries += 1
                        if c not in seen:
                            seen.add(c)
                            picked.append(c)
                            if len(picked) == num_sampled:
                                break
                sampled = np.asarray(picked, np.int64)
            else:
                sampled = np.asarray(dist.sample(rng, num_sampled), np.int64)
                tries = num_sampled
            true_expected = _expected_count(dist.probability(true_classes), num_sampled, tries)
            sampled_expected = _expected_count(dist.probability(sampled), num_sampled, tries)
            dist.update(true_classes)
            return sampled, true_expected.astype(np.float32), sampled_expected.astype(np.float32)
        return run
    return factory


def _sampler_infer(op):
    n = op.get_attr("num_sampled")
    batch = op.inputs[0].shape[0].value if op.inputs[0].shape.ndims == 2 else None
    return [(dtypes.int64, TensorShape([n])), (dtypes.float32, TensorShape([batch, op.get_attr("num_true")])),
            (dtypes.float32, TensorShape([n]))]


def _sampler(op_type: str, true_classes, num_true, num_sampled, unique, range_max, seed, name, extra=None):
    with name_scope(name, op_type, [true_classes]) as scope:
        true_classes = convert_to_tensor(true_classes, dtype=dtypes.int64, name="true_classes")
        if int(num_sampled) < 1 or int(range_max) < 1:
            raise ValueError(f"{op_type}: num_sampled and range_max must be positive, got {num_sampled} and "
                             f"{range_max}")
        attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled), "unique": bool(unique),
                 "range_max": int(range_max), **seed_attrs(seed), **(extra or {})}
        op = make_op(op_type, [true_classes], attrs, name=scope)
        return CandidateSamplerOutput(*op.outputs)


for _op_type, _make in (("UniformCandidateSampler", lambda node, r: _Uniform(r)),
                        ("LogUniformCandidateSampler", lambda node, r: _LogUniform(r)),
                        ("LearnedUnigramCandidateSampler", lambda node, r: _LearnedUnigram(r))):
    register(_op_type, _sampler_infer, _sampler_kernel(_make), grad=None, stateful=True)


@tf_export("nn.uniform_candidate_sampler", "random.uniform_candidate_sampler")
def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """tf.nn.uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
    seed=None, name=None) -> (sampled_candidates, true_expected_count, sampled_expected_count):
    classes drawn uniformly from [0, range_max)."""
    return _sampler("UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed, name)


@tf_export("nn.log_uniform_candidate_sampler", "random.log_uniform_candidate_sampler")
def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """tf.nn.log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
    seed=None, name=None): classes drawn from the log-uniform (Zipfian) distribution
    P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)."""
    return _sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name)


@tf_export("nn.learned_unigram_candidate_sampler", "random.learned_unigram_candidate_sampler")
def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                                      name=None):
    """tf.nn.learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique,
    range_max, seed=None, name=None): classes drawn in proportion to how often they were seen as
    true classes so far (each starting with a count of 1), learned as the session runs."""
    return _sampler("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique, range_max,
                    seed, name)


# -- FixedUnigramCandidateSampler ------------------------------------------------------------------
def _vocab_counts(node, path: str) -> list:
    """The counts of a vocabulary file: one line per class, the count in the last CSV column."""
    counts = []
    try:
        with open(path) as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    counts.append(float(line.strip().split(",")[-1]))
                except ValueError:
                    raise invalid(node, f"vocab_file {path}: line {line_no} does not end in a count: "
                                        f"{line.strip()!r}") from None
    except OSError as e:
        raise invalid(node, f"cannot read vocab_file {path}: {e}") from None
    return counts


def _fixed_unigram(node, range_max: int) -> _Distribution:
    path = node.attr.get("vocab_file") or ""
    path = path.decode() if isinstance(path, bytes) else path
    counts = _vocab_counts(node, path) if path else [float(u) for u in node.attr.get("unigrams") or []]
    reserved = int(node.attr.get("num_reserved_ids", 0))
    weights = np.zeros(range_max)
    values = np.asarray([0.0] * reserved + counts, np.float64) ** float(node.attr.get("distortion", 1.0))
    if reserved:
        values[:reserved] = 0.0
    if len(values) != range_max:
        raise invalid(node, f"range_max ({range_max}) must equal num_reserved_ids ({reserved}) plus the number of "
                            f"unigrams ({len(counts)})")
    shards, shard = int(node.attr.get("num_shards", 1)), int(node.attr.get("shard", 0))
    keep = (np.arange(range_max) % shards) == shard
    weights[keep] = values[keep]
    if weights.sum() <= 0:
        raise invalid(node, "the unigram distribution has no positive weight")
    return _Distribution(weights)


register("FixedUnigramCandidateSampler", _sampler_infer, _sampler_kernel(_fixed_unigram), grad=None, stateful=True)


@tf_export("nn.fixed_unigram_candidate_sampler", "random.fixed_unigram_candidate_sampler")
def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, vocab_file="",
                                    distortion=1.0, num_reserved_ids=0, num_shards=1, shard=0, unigrams=(),
                                    seed=None, name=None):
    """tf.nn.fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
    vocab_file='', distortion=1.0, num_reserved_ids=0, num_shards=1, shard=0, unigrams=(),
    seed=None, name=None): classes drawn in proportion to count^distortion, the counts read from
    vocab_file (the last CSV column of each line) or given as `unigrams`; the first
    num_reserved_ids classes and those of other shards are never drawn."""
    if bool(vocab_file) == bool(list(unigrams)):
        raise ValueError("fixed_unigram_candidate_sampler needs exactly one of vocab_file and unigrams")
    extra = {"vocab_file": vocab_file, "distortion": float(distortion), "num_reserved_ids": int(num_reserved_ids),
             "num_shards": int(num_shards), "shard": int(shard), "unigrams": [float(u) for u in unigrams]}
    return _sampler("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                    name, extra)


# -- AllCandidateSampler ---------------------------------------------------------------------------
def _all_kernel(node, ctx):
    n = int(node.attr["num_sampled"])

    def run(true_classes):
        true_classes = np.asarray(true_classes)
        return np.arange(n, dtype=np.int64), np.ones(true_classes.shape, np.float32), np.ones(n, np.float32)
    return run


register("AllCandidateSampler", _sampler_infer, _all_kernel, grad=None, stateful=True)


@tf_export("nn.all_candidate_sampler", "random.all_candidate_sampler")
def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """tf.nn.all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None,
    name=None): every class of [0, num_sampled), each with expected count 1 (for testing)."""
    return _sampler("AllCandidateSampler", true_classes, num_true, num_sampled, unique, num_sampled, seed, name)


# -- ComputeAccidentalHits -------------------------------------------------------------------------
@tf_export("nn.compute_accidental_hits")
def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """tf.nn.compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None,
    name=None) -> (indices, ids, weights): for each true class of row i that was sampled, the row
    i, the candidate's (last) position in the sample, and weight -FLT_MAX (added to its logit, it
    removes the candidate from that row's loss)."""
    with name_scope(name, "ComputeAccidentalHits", [true_classes, sampled_candidates]) as scope:
        true_classes = convert_to_tensor(true_classes, dtype=dtypes.int64, name="true_classes")
        sampled = convert_to_tensor(sampled_candidates, dtype=dtypes.int64, name="sampled_candidates")
        op = make_op("ComputeAccidentalHits", [true_classes, sampled], {"num_true": int(num_true),
                                                                       **seed_attrs(seed)}, name=scope)
        return tuple(op.outputs)


def _accidental_hits_kernel(node, ctx):
    num_true = int(node.attr["num_true"])

    def run(true_classes, sampled):
        true_classes, sampled = np.asarray(true_classes), np.asarray(sampled)
        if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
            raise invalid(node, f"true_classes must be a matrix with num_true = {num_true} columns, got shape "
                                f"{list(true_classes.shape)}")
        # As TF: one hit per true entry found among the samples, at the candidate's last position.
        position = {c: j for j, c in enumerate(sampled.tolist())}
        rows, ids = [], []
        for i, row in enumerate(true_classes.tolist()):
            for c in row:
                if c in position:
                    rows.append(i)
                    ids.append(position[c])
        return (np.asarray(rows, np.int32), np.asarray(ids, np.int64),
                np.full(len(rows), -np.finfo(np.float32).max, np.float32))
    return run


register("ComputeAccidentalHits", lambda op: [(dtypes.int32, TensorShape([None])), (dtypes.int64, TensorShape([None])),
                                              (dtypes.float32, TensorShape([None]))],
         _accidental_hits_kernel, grad=None)

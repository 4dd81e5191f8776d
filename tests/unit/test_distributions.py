"""tf.distributions: densities, cdfs and statistics against scipy.stats, KL divergences against
closed forms and numeric integration, sample moments (seeded, tolerances from standard errors),
reparameterized-sample gradients against finite differences, and TF 1.15's shapes, names,
validate_args and allow_nan_stats behaviour."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

import tensorweave as tf

from unit_helpers import run

pytestmark = pytest.mark.usefixtures("graph")
tfd = tf.distributions

LOC = np.array([[-1.0], [0.5]])            # batch shapes broadcast: [2, 1] with [3] -> [2, 3]
SCALE = np.array([0.5, 1.0, 2.5])
POS_A = np.array([[0.7], [3.0]])
POS_B = np.array([0.5, 1.5, 4.0])
X = np.array([[-0.3, 0.8, 2.0], [1.2, -2.5, 0.1]])
X_POS = np.array([[0.3, 1.7, 4.0], [2.2, 0.05, 0.9]])
X_UNIT = np.array([[0.3, 0.7, 0.95], [0.2, 0.05, 0.6]])

# (distribution, the same in scipy, points): float64 parameters, batch shape [2, 3].
SCALAR_CASES = {
    "Normal": (lambda: tfd.Normal(LOC, SCALE), stats.norm(LOC, SCALE), X),
    "Laplace": (lambda: tfd.Laplace(LOC, SCALE), stats.laplace(LOC, SCALE), X),
    "StudentT": (lambda: tfd.StudentT(POS_A + 2.5, LOC, SCALE), stats.t(POS_A + 2.5, LOC, SCALE), X),
    "Uniform": (lambda: tfd.Uniform(LOC, LOC + SCALE), stats.uniform(LOC, SCALE + 0 * LOC), X),
    "Gamma": (lambda: tfd.Gamma(POS_A, POS_B), stats.gamma(POS_A, scale=1 / POS_B), X_POS),
    "Exponential": (lambda: tfd.Exponential(POS_B * np.ones([2, 1])), stats.expon(scale=1 / POS_B * np.ones([2, 1])),
                    X_POS),
    "Beta": (lambda: tfd.Beta(POS_A, POS_B), stats.beta(POS_A, POS_B), X_UNIT),
}


@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_scalar_distributions_match_scipy(case):
    make, ref, x = SCALAR_CASES[case]
    d = make()
    assert d.batch_shape.as_list() == [2, 3] and d.event_shape.as_list() == [] and d.dtype == tf.float64
    got = run({"log_prob": d.log_prob(x), "prob": d.prob(x), "cdf": d.cdf(x), "log_cdf": d.log_cdf(x),
               "survival": d.survival_function(x), "log_survival": d.log_survival_function(x),
               "entropy": d.entropy(), "mean": d.mean(), "variance": d.variance(), "stddev": d.stddev(),
               "batch_shape": d.batch_shape_tensor(), "event_shape": d.event_shape_tensor()})
    want = {"log_prob": ref.logpdf(x), "prob": ref.pdf(x), "cdf": ref.cdf(x), "log_cdf": ref.logcdf(x),
            "survival": ref.sf(x), "log_survival": ref.logsf(x), "entropy": ref.entropy(),
            "mean": ref.mean(), "variance": ref.var(), "stddev": ref.std()}
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-12, err_msg=key)
    assert got["batch_shape"].tolist() == [2, 3] and got["event_shape"].tolist() == []


def test_tails_and_quantile():
    n = tfd.Normal(0.0, 1.0)
    lap = tfd.Laplace(np.float64(0.0), np.float64(1.0))
    z = np.array([-30.0, -12.0, -4.0, 0.0, 4.0, 9.0], np.float32)
    log_cdf, log_sf, q, lap_cdf = run([n.log_cdf(z), n.log_survival_function(z), n.quantile([0.025, 0.5, 0.9]),
                                       lap.log_cdf(np.array([-40.0, 40.0]))])
    np.testing.assert_allclose(log_cdf, special.log_ndtr(z.astype(np.float64)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(log_sf, special.log_ndtr(-z.astype(np.float64)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(q, stats.norm.ppf([0.025, 0.5, 0.9]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lap_cdf, stats.laplace.logcdf([-40.0, 40.0]), rtol=1e-12)


def test_modes_and_undefined_statistics():
    modes = run([tfd.Normal(LOC, SCALE).mode(), tfd.Gamma([0.5, 3.0], 2.0).mode(),
                 tfd.Beta([2.0, 0.5], [3.0, 2.0]).mode(), tfd.StudentT([0.5, 1.5, 3.0], 1.0, 2.0).mean(),
                 tfd.StudentT([0.5, 1.5, 3.0], 1.0, 2.0).variance(), tfd.Laplace(2.0, 1.0).mode()])
    np.testing.assert_allclose(modes[0], LOC * np.ones([1, 3]))
    np.testing.assert_allclose(modes[1], [np.nan, 1.0])
    np.testing.assert_allclose(modes[2], [1 / 3, np.nan], rtol=1e-6)
    np.testing.assert_allclose(modes[3], [np.nan, 1.0, 1.0])
    np.testing.assert_allclose(modes[4], [np.nan, np.inf, 4.0 * 3.0])
    assert modes[5] == 2.0
    strict = tfd.Gamma([0.5, 3.0], 2.0, allow_nan_stats=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="mode not defined when any concentration <= 1"):
        run(strict.mode())
    assert run(tfd.Gamma(3.0, 2.0, allow_nan_stats=False).mode()) == 1.0


def test_bernoulli():
    p = np.array([0.1, 0.6, 0.95])
    b = tfd.Bernoulli(probs=p)
    bl = tfd.Bernoulli(logits=np.log(p / (1 - p)), dtype=tf.float32)
    assert b.dtype == tf.int32 and bl.dtype == tf.float32 and b.reparameterization_type is tfd.NOT_REPARAMETERIZED
    got = run([b.log_prob([[1], [0]]), bl.prob([1, 1, 0]), b.entropy(), b.mean(), b.variance(), b.mode(),
               bl.mode(), b.logits, bl.probs])
    np.testing.assert_allclose(got[0], stats.bernoulli(p).logpmf([[1], [0]]), rtol=1e-6)
    np.testing.assert_allclose(got[1], stats.bernoulli(p).pmf([1, 1, 0]), rtol=1e-6)
    np.testing.assert_allclose(got[2], stats.bernoulli(p).entropy(), rtol=1e-6)
    np.testing.assert_allclose(got[3:5], [p, p * (1 - p)], rtol=1e-6)
    assert got[5].tolist() == [0, 1, 1] and got[6].dtype == np.float32
    np.testing.assert_allclose(got[7], special.logit(p), rtol=1e-6)
    np.testing.assert_allclose(got[8], p, rtol=1e-6)


def test_categorical():
    logits = np.log([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    c = tfd.Categorical(logits=logits)
    cp = tfd.Categorical(probs=np.exp(logits), dtype=tf.int64)
    assert c.batch_shape.as_list() == [2] and c.event_shape.as_list() == [] and cp.dtype == tf.int64
    k = np.array([[0, 2], [1, 1], [2, 0]])          # [3, 2] against batch [2]: broadcast
    got = run([c.log_prob(k), cp.prob(k), c.cdf([0, 2]), c.entropy(), c.mode(), cp.mode(), c.event_size])
    np.testing.assert_allclose(got[0], logits[np.arange(2), k], rtol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(logits)[np.arange(2), k], rtol=1e-6)
    np.testing.assert_allclose(got[2], [0.0, 0.9], rtol=1e-6)   # TF's Categorical.cdf(k) sums p over classes < k
    np.testing.assert_allclose(got[3], [stats.entropy(np.exp(r)) for r in logits], rtol=1e-6)
    assert got[4].tolist() == [2, 0] and got[5].dtype == np.int64 and got[6] == 3


def test_dirichlet():
    alpha = np.array([[1.5, 2.0, 3.0], [0.7, 4.0, 1.0]])
    d = tfd.Dirichlet(alpha)
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    assert d.batch_shape.as_list() == [2] and d.event_shape.as_list() == [3]
    got = run([d.log_prob(x), d.entropy(), d.mean(), d.variance(), d.covariance(), d.event_shape_tensor()])
    for i in range(2):
        ref = stats.dirichlet(alpha[i])
        np.testing.assert_allclose(got[0][i], ref.logpdf(x[i]), rtol=1e-10)
        np.testing.assert_allclose(got[1][i], ref.entropy(), rtol=1e-10)
        np.testing.assert_allclose(got[2][i], ref.mean(), rtol=1e-10)
        np.testing.assert_allclose(got[3][i], ref.var(), rtol=1e-10)
        np.testing.assert_allclose(got[4][i], ref.cov(), rtol=1e-10, atol=1e-15)
    assert got[5].tolist() == [3]
    mode = run(d.mode())
    np.testing.assert_allclose(mode[0], (alpha[0] - 1) / (alpha[0].sum() - 3), rtol=1e-12)
    assert np.isnan(mode[1]).all()              # a concentration <= 1: the member's mode is undefined
    with pytest.raises(tf.errors.InvalidArgumentError, match="Mode undefined when any concentration <= 1"):
        run(tfd.Dirichlet(alpha, allow_nan_stats=False).mode())


def test_multinomial_and_dirichlet_multinomial():
    probs = np.array([0.2, 0.3, 0.5])
    m = tfd.Multinomial(total_count=np.array([4.0, 6.0]), probs=probs)
    counts = np.array([[1.0, 1.0, 2.0], [3.0, 0.0, 3.0]])
    alpha = np.array([1.5, 0.5, 2.0])
    dm = tfd.DirichletMultinomial(np.float64(5.0), alpha)
    dm_counts = np.array([[2.0, 0.0, 3.0], [1.0, 1.0, 3.0]])
    assert m.batch_shape.as_list() == [2] and m.event_shape.as_list() == [3] and dm.event_shape.as_list() == [3]
    got = run([m.log_prob(counts), m.mean(), m.variance(), m.covariance(), dm.log_prob(dm_counts), dm.mean(),
               dm.variance(), dm.covariance()])
    for i, n in enumerate([4, 6]):
        ref = stats.multinomial(n, probs)
        np.testing.assert_allclose(got[0][i], ref.logpmf(counts[i]), rtol=1e-5)
        np.testing.assert_allclose(got[1][i], ref.mean(), rtol=1e-6)
        np.testing.assert_allclose(got[3][i], ref.cov(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2][i], np.diag(ref.cov()), rtol=1e-5)
    ref = stats.dirichlet_multinomial(alpha, 5)
    np.testing.assert_allclose(got[4], ref.logpmf(dm_counts), rtol=1e-10)
    np.testing.assert_allclose(got[5], ref.mean(), rtol=1e-10)
    np.testing.assert_allclose(got[7], ref.cov(), rtol=1e-10)
    np.testing.assert_allclose(got[6], np.diag(ref.cov()), rtol=1e-10)


# -- KL divergence -------------------------------------------------------------------------------------
def _quad_kl(p, q, lo, hi):
    return integrate.quad(lambda x: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), lo, hi, limit=200)[0]


def test_kl_divergences():
    normal = tfd.kl_divergence(tfd.Normal(0.3, 1.5), tfd.Normal([-1.0, 2.0], 0.7))
    gamma = tfd.kl_divergence(tfd.Gamma(*np.float64([2.5, 1.5])), tfd.Gamma(*np.float64([1.2, 0.4])))
    beta = tfd.Beta(*np.float64([2.0, 3.0])).kl_divergence(tfd.Beta(*np.float64([4.0, 1.5])))
    dirichlet = tfd.kl_divergence(tfd.Dirichlet(np.array([2.0, 3.0])), tfd.Dirichlet(np.array([4.0, 1.5])))
    expo = tfd.kl_divergence(tfd.Exponential(2.0), tfd.Exponential(0.5))     # via the Gamma registration
    bern = tfd.kl_divergence(tfd.Bernoulli(probs=0.3), tfd.Bernoulli(logits=[0.0, 1.0]))
    p, q = np.array([0.2, 0.3, 0.5]), np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    cat = tfd.kl_divergence(tfd.Categorical(probs=p), tfd.Categorical(logits=np.log(q)))
    got = run([normal, gamma, beta, dirichlet, expo, bern, cat])
    want_normal = [_quad_kl(stats.norm(0.3, 1.5), stats.norm(m, 0.7), -20, 20) for m in (-1.0, 2.0)]
    np.testing.assert_allclose(got[0], want_normal, rtol=1e-5)
    np.testing.assert_allclose(got[1], _quad_kl(stats.gamma(2.5, scale=1 / 1.5), stats.gamma(1.2, scale=1 / 0.4),
                                                0, 60), rtol=1e-8)
    want_beta = _quad_kl(stats.beta(2.0, 3.0), stats.beta(4.0, 1.5), 0, 1)
    np.testing.assert_allclose(got[2], want_beta, rtol=1e-8)
    np.testing.assert_allclose(got[3], want_beta, rtol=1e-8)         # Dirichlet on 2 classes is a Beta
    np.testing.assert_allclose(got[4], np.log(2.0 / 0.5) + 0.5 / 2.0 - 1, rtol=1e-6)
    q1 = special.expit([0.0, 1.0])
    np.testing.assert_allclose(got[5], 0.3 * np.log(0.3 / q1) + 0.7 * np.log(0.7 / (1 - q1)), rtol=1e-5)
    np.testing.assert_allclose(got[6], (p * np.log(p / q)).sum(-1), rtol=1e-5)


def test_kl_registry_and_cross_entropy():
    class Shifted(tfd.Normal):
        pass

    a, b = Shifted(0.0, 1.0), tfd.Normal(1.0, 2.0)
    inherited = tfd.kl_divergence(a, b)                          # Normal-Normal serves the subclass
    with pytest.raises(NotImplementedError, match="No KL.*Normal and distribution_b type Gamma"):
        tfd.kl_divergence(b, tfd.Gamma(1.0, 1.0))
    with pytest.raises(ValueError, match="already been registered"):
        tfd.RegisterKL(tfd.Normal, tfd.Normal)(lambda a, b, name=None: None)

    @tfd.RegisterKL(Shifted, tfd.Normal)
    def _kl_shifted(x, y, name=None):
        return tf.constant(42.0)

    own = tfd.kl_divergence(a, b)
    h = b.cross_entropy(tfd.Normal(0.0, 3.0))
    nan_kl = tfd.kl_divergence(tfd.Normal(0.0, 1.0), tfd.Normal(0.0, np.nan), allow_nan_stats=False)
    got = run([inherited, own, h])
    np.testing.assert_allclose(got[0], np.log(2.0) + (1 + 1) / 8 - 0.5, rtol=1e-6)
    assert got[1] == 42.0
    want_h = integrate.quad(lambda x: -stats.norm(1, 2).pdf(x) * stats.norm(0, 3).logpdf(x), -40, 40)[0]
    np.testing.assert_allclose(got[2], want_h, rtol=1e-6)
    with pytest.raises(tf.errors.InvalidArgumentError, match="returned NaN values"):
        run(nan_kl)


# -- sampling ------------------------------------------------------------------------------------------
def _check_moments(samples, mean, variance, n_axes=1):
    """Sample means within 5 standard errors of the distribution's mean."""
    n = np.prod(samples.shape[:n_axes])
    error = np.sqrt(variance / n)
    assert np.all(np.abs(samples.mean(axis=tuple(range(n_axes))) - mean) < 5 * error + 1e-12), \
        (samples.mean(axis=tuple(range(n_axes))), mean, error)


@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_scalar_sample_moments(case):
    make, ref, _ = SCALAR_CASES[case]
    d = make()
    s = d.sample([200, 100], seed=7)
    assert s.shape.as_list() == [200, 100, 2, 3] and s.dtype == tf.float64
    _check_moments(run(s), ref.mean(), ref.var(), n_axes=2)


def test_discrete_and_vector_sample_moments():
    p = np.array([0.1, 0.6])
    logits = np.log([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    alpha = np.array([[1.5, 2.0, 3.0], [0.7, 4.0, 1.0]])
    samples = {"bern": tfd.Bernoulli(probs=p).sample(20000, seed=1),
               "cat": tfd.Categorical(logits=logits).sample(20000, seed=2),
               "dir": tfd.Dirichlet(alpha).sample(20000, seed=3),
               "mult": tfd.Multinomial(np.array([3.0, 7.0]), logits=logits).sample(4000, seed=4),
               "dm": tfd.DirichletMultinomial(np.float64(6.0), alpha).sample(4000, seed=5)}
    assert samples["bern"].shape.as_list() == [20000, 2] and samples["cat"].shape.as_list() == [20000, 2]
    assert samples["dir"].shape.as_list() == [20000, 2, 3] and samples["mult"].shape.as_list() == [4000, 2, 3]
    got = run(samples)
    _check_moments(got["bern"], p, p * (1 - p))
    for i in range(2):
        probs = np.exp(logits[i])
        _check_moments(np.eye(3)[got["cat"][:, i]], probs, probs * (1 - probs))
        ref = stats.dirichlet(alpha[i])
        _check_moments(got["dir"][:, i], ref.mean(), ref.var())
        n = [3, 7][i]
        _check_moments(got["mult"][:, i], n * probs, n * probs * (1 - probs))
        ref = stats.dirichlet_multinomial(alpha[i], 6)
        _check_moments(got["dm"][:, i], ref.mean(), np.diag(ref.cov()))
    np.testing.assert_allclose(got["dir"].sum(-1), 1.0, rtol=1e-5)
    assert (got["mult"].sum(-1) == [3, 7]).all() and (got["dm"].sum(-1) == 6).all()
    assert set(np.unique(got["bern"])) == {0, 1} and got["bern"].dtype == np.int32


def test_same_seed_same_samples_and_sample_shape_forms():
    d = tfd.Normal([0.0, 1.0], 1.0)
    scalar, vector, tensor = d.sample(3, seed=11), d.sample([3], seed=11), d.sample(tf.constant([2, 2]), seed=5)
    assert scalar.shape.as_list() == [3, 2] and d.sample().shape.as_list() == [2]
    assert tensor.shape.as_list() == [2, 2, 2] and scalar.name.startswith("Normal/sample/")
    assert d.sample(tf.TensorShape([4, 1])).shape.as_list() == [4, 1, 2]
    a, b = run([scalar, vector])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="neither scalar nor vector"):
        d.sample([[2, 3]])


# -- reparameterized gradients -------------------------------------------------------------------------
def _finite_difference(sample_fn, value, h=1e-4):
    """d sample / d parameter by central differences, each side in a new graph and session with the
    same seeds (so the same underlying random numbers)."""
    sides = []
    for v in (value + h, value - h):
        with tf.Graph().as_default():
            sides.append(run(sample_fn(tf.constant(v))))
    return (sides[0] - sides[1]) / (2 * h)


@pytest.mark.parametrize("name", ["Normal.loc", "Normal.scale", "Uniform.low", "Uniform.high", "Laplace.scale"])
def test_reparameterized_sample_gradients(name):
    one = np.float64(1.0)
    builders = {"Normal.loc": lambda p: tfd.Normal(p, 2 * one).sample(5, seed=3),
                "Normal.scale": lambda p: tfd.Normal(one, p).sample(5, seed=3),
                "Uniform.low": lambda p: tfd.Uniform(p, 3 * one).sample(5, seed=3),
                "Uniform.high": lambda p: tfd.Uniform(-one, p).sample(5, seed=3),
                "Laplace.scale": lambda p: tfd.Laplace(one / 2, p).sample(5, seed=3)}
    value = np.array([0.5, 1.5], np.float64)
    param = tf.constant(value)
    sample = builders[name](param)
    (grad,) = run(tf.gradients(tf.reduce_sum(sample * [1.0, -2.0]), param))
    fd = _finite_difference(builders[name], value)
    np.testing.assert_allclose(grad, (fd * [1.0, -2.0]).sum(0), rtol=1e-6)


def test_gamma_sample_gradient_is_the_implicit_reparameterization():
    """A Gamma sample x = F^-1(u; concentration) / rate with u held fixed: its derivative is the
    finite difference of scipy's inverse regularized incomplete gamma function at u."""
    conc = np.array([0.6, 2.0, 9.0])
    param = tf.constant(conc)
    x = tfd.Gamma(param, np.float64(2.0)).sample(6, seed=4)
    assert tfd.Gamma(1.0, 1.0).reparameterization_type is tfd.FULLY_REPARAMETERIZED
    xv, (grad,) = run([x, tf.gradients(x, param)])
    u = special.gammainc(conc, 2.0 * xv)
    h = 1e-6
    fd = (special.gammaincinv(conc + h, u) - special.gammaincinv(conc - h, u)) / (2 * h) / 2.0
    np.testing.assert_allclose(grad, fd.sum(0), rtol=1e-5)


def test_beta_sample_gradient_is_unbiased():
    """Beta samples are differentiable through their two Gamma samples: over a batch of 20000
    identical Betas, the per-sample d x / d concentration1 average d E[x] / d c1 = c0 / (c1 + c0)^2."""
    c1 = tf.constant(np.full(20000, 2.0))
    (grad,) = run(tf.gradients(tf.reduce_sum(tfd.Beta(c1, np.full(20000, 3.0)).sample(seed=6)), c1))
    assert abs(grad.mean() - 3.0 / 25.0) < 5 * grad.std() / np.sqrt(grad.size)


# -- the base class: names, shapes, parameters, fallbacks ----------------------------------------------
def test_names_parameters_and_shapes():
    n = tfd.Normal(loc=[0.0, 1.0], scale=2.0)
    n2 = tfd.Normal(loc=[0.0, 1.0], scale=2.0)
    assert (n.name, n2.name) == ("Normal/", "Normal_1/")
    assert n.loc.name == "Normal/loc:0" and n.log_prob(1.0).name.startswith("Normal/log_prob/")
    assert n2.entropy().name.startswith("Normal_1/entropy/")
    assert n.parameters == {"loc": [0.0, 1.0], "scale": 2.0, "validate_args": False, "allow_nan_stats": True,
                            "name": "Normal"}
    assert str(n) == 'tfp.distributions.Normal("Normal/", batch_shape=(2,), event_shape=(), dtype=float32)'
    assert repr(tfd.Dirichlet([[1.0, 2.0, 3.0]])).endswith("batch_shape=(1,) event_shape=(3,) dtype=float32>")
    assert tfd.Exponential(2.0).parameters == {"rate": 2.0, "validate_args": False, "allow_nan_stats": True,
                                               "name": "Exponential"}
    wide = n.copy(scale=[1.0, 2.0], name="Wide")
    assert wide.name == "Wide/" and run(wide.stddev()).tolist() == [1.0, 2.0]
    assert tfd.Normal.param_static_shapes([2, 3]) == {"loc": tf.TensorShape([2, 3]), "scale": tf.TensorShape([2, 3])}
    assert run(tfd.Gamma.param_shapes([4])["rate"]).tolist() == [4]
    placeholder = tfd.Normal(tf.placeholder(tf.float32, [None, 3]), 1.0)
    assert placeholder.batch_shape.as_list() == [None, 3]
    assert run(placeholder.batch_shape_tensor(), {placeholder.loc: np.zeros([5, 3])}).tolist() == [5, 3]
    assert run([n.is_scalar_batch(), n.is_scalar_event(), tfd.Gamma(1.0, 1.0).is_scalar_batch()]) == [False, True,
                                                                                                       True]
    reparameterized = [tfd.Normal(0.0, 1.0), tfd.Uniform(), tfd.Gamma(1.0, 1.0), tfd.Beta(1.0, 1.0),
                       tfd.StudentT(1.0, 0.0, 1.0), tfd.Laplace(0.0, 1.0), tfd.Exponential(1.0),
                       tfd.Dirichlet([1.0, 1.0])]
    assert all(d.reparameterization_type is tfd.FULLY_REPARAMETERIZED for d in reparameterized)
    assert repr(tfd.FULLY_REPARAMETERIZED) == "<Reparameterization Type: FULLY_REPARAMETERIZED>"
    assert tfd.Multinomial(2.0, probs=[0.5, 0.5]).reparameterization_type == tfd.NOT_REPARAMETERIZED
    assert tfd.DirichletMultinomial(2.0, [1.0, 1.0]).reparameterization_type != tfd.FULLY_REPARAMETERIZED


def test_subclass_fallbacks_and_missing_methods():
    class Halves(tfd.Distribution):
        """P(x) = 1/2 on {0, 1}: only _log_prob and _variance are given."""

        def __init__(self):
            super().__init__(tf.float32, tfd.NOT_REPARAMETERIZED, validate_args=False, allow_nan_stats=True)

        def _log_prob(self, x):
            return tf.fill(tf.shape(x), np.log(np.float32(0.5)))

        def _variance(self):
            return tf.constant(0.25)

    h = Halves()
    assert h.name == "Halves/" and h.batch_shape.ndims is None
    prob, stddev = run([h.prob([0.0, 1.0]), h.stddev()])
    np.testing.assert_allclose(prob, [0.5, 0.5])
    assert stddev == 0.5
    with pytest.raises(NotImplementedError, match="cdf is not implemented: Halves"):
        h.cdf(0.0)
    with pytest.raises(NotImplementedError, match="covariance is not implemented: Normal"):
        tfd.Normal(0.0, 1.0).covariance()


# -- bad input -----------------------------------------------------------------------------------------
def test_construction_errors():
    with pytest.raises(ValueError, match="Expected floating point type, got int32"):
        tfd.Normal(0, 1)
    with pytest.raises(ValueError, match="must be of the same type"):
        tfd.Normal(np.float64(0.0), np.float32(1.0))
    with pytest.raises(ValueError, match="Must pass probs or logits, but not both"):
        tfd.Bernoulli(logits=0.3, probs=0.4)
    with pytest.raises(TypeError, match="logits must having floating type"):
        tfd.Categorical(logits=[1, 2])
    with pytest.raises(ValueError, match="at least 2 events; probs has shape"):
        tfd.Categorical(probs=[[1.0]], validate_args=True)


@pytest.mark.parametrize("make,feed,message", [
    (lambda p: tfd.Normal(0.0, p, validate_args=True).mean(), -1.0, "scale must be positive"),
    (lambda p: tfd.Gamma(p, 1.0, validate_args=True).mean(), 0.0, "concentration must be positive"),
    (lambda p: tfd.StudentT(p, 0.0, 1.0, validate_args=True).mode(), -2.0, "df must be positive"),
    (lambda p: tfd.Uniform(p, 1.0, validate_args=True).mean(), 2.0, "uniform not defined when low >= high"),
    (lambda p: tfd.Beta(1.0, p, validate_args=True).mean(), -1.0, "concentration0 must be positive"),
    (lambda p: tfd.Bernoulli(probs=p, validate_args=True).mean(), 1.5, "probs has components greater than 1"),
    (lambda p: tfd.Categorical(probs=[0.5, p], validate_args=True).entropy(), 0.7, "probs does not sum to 1"),
    (lambda p: tfd.Multinomial(p, probs=[0.5, 0.5], validate_args=True).mean(), 2.5,
     "total_count cannot contain fractional components"),
    (lambda p: tfd.Multinomial(3.0, probs=[0.5, 0.5], validate_args=True).log_prob([1.0, p]), 1.0,
     "counts must sum to `total_count`"),
    (lambda p: tfd.Gamma(2.0, 1.0, validate_args=True).log_prob(p), -1.0, "x must be positive"),
    (lambda p: tfd.Bernoulli(probs=0.5, validate_args=True).log_prob(p), 0.5, "event must be 0 or 1"),
    (lambda p: tfd.Dirichlet([1.0, p], validate_args=True).mean(), -0.5, "concentration must be positive"),
])
def test_validate_args_errors_name_the_parameter(make, feed, message):
    p = tf.placeholder(tf.float32, [])
    out = make(p)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run(out, {p: feed})


def test_fitting_a_normal_by_maximum_likelihood_and_a_reparameterized_sample():
    """A TF1 program's use: variables as parameters, log_prob as the loss, an optimizer; and a
    loss on reparameterized samples, whose gradients reach loc and scale through sample()."""
    data = np.random.RandomState(0).normal(2.0, 0.5, size=400).astype(np.float32)
    loc, log_scale = tf.Variable(0.0), tf.Variable(0.0)
    fit = tfd.Normal(loc, tf.exp(log_scale))
    nll = -tf.reduce_mean(fit.log_prob(data))
    q_loc, q_log_scale = tf.Variable(0.0), tf.Variable(0.0)
    q = tfd.Normal(q_loc, tf.exp(q_log_scale))
    # E_q[(x - 3)^2] + KL(q || N(0, 1)) = (m - 3)^2 + s^2 + (s^2 + m^2 - 1)/2 - log s: least at m = 2, s^2 = 1/3
    elbo_like = tf.reduce_mean(tf.square(q.sample(2000, seed=1) - 3.0)) + q.kl_divergence(tfd.Normal(0.0, 1.0))
    train = tf.train.AdamOptimizer(0.05).minimize(nll + elbo_like)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(400):
            sess.run(train)
        got = sess.run([loc, fit.scale, q_loc, q.scale])
    np.testing.assert_allclose(got[:2], [data.mean(), data.std()], rtol=0.02)
    np.testing.assert_allclose(got[2:], [2.0, 1 / np.sqrt(3.0)], rtol=0.03)

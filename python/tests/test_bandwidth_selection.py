"""Bandwidth rules of MeanShift(bandwidth='auto' | 'quantile:Q' | 'scott' | 'silverman' | 'adaptive' | 'abramson')."""
import numpy as np
import pytest
from sklearn.cluster import estimate_bandwidth
from sklearn.metrics import adjusted_rand_score

from meanshift import MeanShift


def _multiscale(seed=0):
    r = np.random.RandomState(seed)
    X = np.vstack([r.normal((0, 0), 0.05, (100, 2)), r.normal((0.6, 0), 0.05, (100, 2)),
                   r.normal((12, 12), 2.0, (300, 2)), r.normal((-14, 10), 5.0, (400, 2))])
    y = np.repeat([0, 1, 2, 3], [100, 100, 300, 400])
    return X, y


def test_auto_is_half_of_sklearns_estimate():
    X, _ = _multiscale()
    X = X.astype(np.float32).astype(np.float64)  # the library estimates on float32
    ref = estimate_bandwidth(X, quantile=0.3) / 2
    for bw in (None, "auto", "quantile:0.3"):
        assert MeanShift(bandwidth=bw).fit(X).bandwidth_ == pytest.approx(ref, rel=1e-5)
    assert MeanShift(bandwidth="quantile:0.1").fit(X).bandwidth_ == pytest.approx(
        estimate_bandwidth(X, quantile=0.1) / 2, rel=1e-5)


def test_scott_and_silverman_closed_forms():
    X = np.random.RandomState(1).normal(0, [1.0, 3.0], (400, 2))
    n, k = X.shape
    s = X.astype(np.float32).astype(np.float64).std(axis=0, ddof=1)
    scott = n ** (-1 / (k + 4))
    silverman = (n * (k + 2) / 4) ** (-1 / (k + 4))
    assert MeanShift(bandwidth="scott").fit(X).bandwidth_ == pytest.approx(scott * np.sqrt((s**2).mean()), rel=1e-5)
    np.testing.assert_allclose(MeanShift(bandwidth="silverman:per-dim").fit(X).bandwidth_, silverman * s, rtol=1e-5)


def test_adaptive_recovers_clusters_of_different_scales():
    X, y = _multiscale()
    m = MeanShift(bandwidth="adaptive").fit(X)
    assert m.bandwidth_.shape == X.shape
    assert adjusted_rand_score(y, m.labels_) > 0.9  # 0.945 measured; a fixed bandwidth merges or splits
    # predict reuses the per-sample bandwidths of the training data
    assert np.array_equal(m.predict(X[:50]), m.labels_[:50])


def test_adaptive_default_on_a_low_dimensional_set_in_64_features():
    # Four clusters on a 5-D subspace of 64 features (digits-like: intrinsic dimension << k): the
    # rule's share of d_K follows the estimated intrinsic dimension (~5), not the 64 features.
    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(4), 150)
    low = rng.normal(0, 6, (4, 5))[y] + rng.normal(0, 1, (600, 5))
    basis = np.linalg.qr(rng.normal(size=(64, 5)))[0]
    X = low @ basis.T + rng.normal(0, 0.05, (600, 64))
    m = MeanShift(bandwidth="adaptive").fit(X)
    assert adjusted_rand_score(y, m.labels_) > 0.85
    # Half the factor splits them: the default is not just any width.
    assert adjusted_rand_score(y, MeanShift(bandwidth="adaptive::0.5").fit(X).labels_) < 0.5


def test_adaptive_default_on_full_dimensional_clusters_in_128_features():
    # Gaussian clusters that fill all 128 dimensions (standard deviations 1 to 4): neighbour
    # distances concentrate near d_K, and without the self-weight floor every point is its own mode
    # (the former rule, sigma_i = 0.7 d_K / k^(1/5): 800 clusters, ARI 0).
    rng = np.random.default_rng(9)
    y = np.repeat(np.arange(4), 200)
    X = rng.uniform(-20, 20, (4, 128))[y] + rng.normal(0, 1, (800, 128)) * np.array([1.0, 2.0, 3.0, 4.0])[y, None]
    m = MeanShift(bandwidth="adaptive").fit(X)
    assert adjusted_rand_score(y, m.labels_) > 0.95
    # 0.6 of the rule's bandwidths over-splits: the exact answer (which the defaults give since the
    # bins of these 800 points would be singletons) has 40 clusters, ARI 0.86.
    small = MeanShift(bandwidth="adaptive::0.6").fit(X)
    assert len(small.cluster_centers_) > 10
    assert adjusted_rand_score(y, small.labels_) < 0.9


@pytest.mark.parametrize("bw", ["nope", "quantile:2", "quantile:x", "adaptive:0", "adaptive:5:1:2",
                                "scott:diag", "adaptive:1000", "abramson:x", "abramson:-1",
                                "abramson:2:1:3"])
def test_bad_rules(bw):
    X, _ = _multiscale()
    with pytest.raises(ValueError):
        MeanShift(bandwidth=bw).fit(X[:200])


def test_adaptive_duplicates_get_a_floor():
    X = np.vstack([np.zeros((10, 2)), np.random.RandomState(2).normal(5, 1, (40, 2))])
    h = MeanShift(bandwidth="adaptive:5").fit(X).bandwidth_
    assert np.all(h > 0)


def test_abramson_follows_the_pilot_density():
    # h_i = C sigma_p (f(x_i)/g)^(-1/2): dense samples get smaller bandwidths and the geometric mean
    # is C sigma_p (here an explicit pilot sigma_p = 0.5 and C = 2). ARI 0.856 with the CLI's same rule
    # (the two tight clusters 0.6 apart merge; the k-NN rule separates them, see the test above).
    X, y = _multiscale()
    m = MeanShift(bandwidth="abramson:2:0.5").fit(X)
    h = m.bandwidth_
    assert h.shape == X.shape and np.all(h > 0)
    assert np.exp(np.log(h[:, 0]).mean()) == pytest.approx(1.0, rel=1e-3)
    assert np.median(h[:200, 0]) < np.median(h[500:, 0])  # the tight clusters are the dense ones
    assert adjusted_rand_score(y, m.labels_) > 0.8


@pytest.mark.parametrize("backend", ["openmp", "opencl"])
def test_adaptive_knn_search_runs_on_the_estimators_backend(backend):
    # The k-NN search of the adaptive rule runs on the estimator's backend (brute force on OpenCL
    # devices, the kd-tree on all threads for openmp): the same per-sample bandwidths as the serial
    # host search, so the same labels.
    from meanshift import _core, backends
    if backend not in [b["name"] for b in backends() if b["usable"]]:
        pytest.skip(f"backend {backend} not usable here")
    X, y = _multiscale()
    X = X.astype(np.float32)
    d_serial = np.asarray(_core.knn_distances(X, 12, "serial"))
    d_backend = np.asarray(_core.knn_distances(X, 12, backend))
    np.testing.assert_allclose(d_backend, d_serial, rtol=1e-5)
    ref = MeanShift(bandwidth="adaptive", backend="serial").fit(X)
    got = MeanShift(bandwidth="adaptive", backend=backend).fit(X)
    assert adjusted_rand_score(ref.labels_, got.labels_) >= 0.99
    assert adjusted_rand_score(y, got.labels_) >= 0.9

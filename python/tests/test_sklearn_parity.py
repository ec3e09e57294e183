"""GroupingMethod::ScikitLearn: the estimator with the flat kernel, every point a seed, tol 1e-3 and
max_iter 300 against the installed scikit-learn's MeanShift on its own test data
(sklearn/cluster/tests/test_mean_shift.py): same clusters, centres within 1e-3 bandwidths,
identical labels."""
import inspect

import numpy as np
import pytest

import meanshift

sklearn_cluster = pytest.importorskip("sklearn.cluster")
sklearn_datasets = pytest.importorskip("sklearn.datasets")

PARAMS = inspect.signature(meanshift.MeanShift.__init__).parameters
pytestmark = pytest.mark.skipif(
    "kernel" not in PARAMS, reason="the estimator has no kernel= parameter yet (flat profile not exposed)")

CENTERS = np.array([[1, 1], [-1, -1], [1, -1]]) + 10


def sklearn_blobs(n=300, random_state=11):
    X, _ = sklearn_datasets.make_blobs(n_samples=n, n_features=2, centers=CENTERS, cluster_std=0.4,
                                       shuffle=True, random_state=random_state)
    # The library reads float32: both sides get the same values.
    return X.astype(np.float32).astype(np.float64)


def ours(h, backend="serial"):
    return meanshift.MeanShift(bandwidth=h, kernel="flat", grouping="sklearn", bin_seeding=False,
                               max_iter=300, tol=1e-3, merge_eps=1.0, backend=backend)


def check_parity(X, h, backend="serial"):
    ref = sklearn_cluster.MeanShift(bandwidth=h).fit(X)
    got = ours(h, backend).fit(X)
    assert got.cluster_centers_.shape == ref.cluster_centers_.shape
    assert np.max(np.abs(got.cluster_centers_ - ref.cluster_centers_)) / h < 1e-3
    np.testing.assert_array_equal(got.labels_, ref.labels_)


@pytest.mark.parametrize("h", [0.8, 1.0, 1.2, 1.5, 2.5])
def test_sklearn_test_data(h):
    check_parity(sklearn_blobs(), h)


@pytest.mark.parametrize("random_state", range(5))
def test_estimated_bandwidth(random_state):
    # test_parallel's data sets with scikit-learn's own bandwidth estimate.
    X = sklearn_blobs(50, random_state)
    check_parity(X, float(sklearn_cluster.estimate_bandwidth(X)))


def test_cluster_intensity_tie():
    a = np.array([[1, 1], [2, 1], [1, 0], [4, 7], [3, 5], [3, 6]], float)
    b = np.array([[4, 7], [3, 5], [3, 6], [1, 1], [2, 1], [1, 0]], float)
    np.testing.assert_array_equal(ours(2.0).fit(a).labels_, [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(ours(2.0).fit(b).labels_, [0, 0, 0, 1, 1, 1])


def test_openmp_backend():
    check_parity(sklearn_blobs(), 1.2, backend="openmp")

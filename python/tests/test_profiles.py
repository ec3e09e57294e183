"""Kernel profiles through MeanShift(kernel=...): the library's names pass through, a flat step is
scikit-learn's (the mean of the samples within the radius), vMF keeps its modes on the unit sphere,
and bad names or inputs raise ValueError naming the problem."""
import numpy as np
import pytest

from meanshift import MeanShift

@pytest.mark.parametrize("kernel", ["gaussian", "flat", "epanechnikov", "biweight"])
def test_profiles_find_three_blobs(kernel):
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.vstack([c + 0.4 * rng.standard_normal((80, 2)) for c in centres]).astype(np.float32)
    ms = MeanShift(bandwidth=1.5, kernel=kernel, backend="serial").fit(X)
    assert len(ms.cluster_centers_) == 3
    for c in centres:
        assert np.min(np.linalg.norm(ms.cluster_centers_ - c, axis=1)) < 0.3


def test_flat_step_is_the_mean_within_the_radius():
    rng = np.random.default_rng(5)
    X = rng.uniform(-3, 3, size=(300, 2)).astype(np.float32)
    seed = np.array([[0.3, -0.2]], dtype=np.float32)
    h = 1.2
    ms = MeanShift(bandwidth=h, kernel="flat", seeds=seed, max_iter=1, tol=0.0, backend="serial").fit(X)
    d = np.linalg.norm(X.astype(np.float64) - seed.astype(np.float64), axis=1)
    want = X[d <= h].astype(np.float64).mean(axis=0)
    assert np.allclose(ms.cluster_centers_[0], want, atol=1e-5)


def test_vmf_modes_stay_on_the_sphere():
    rng = np.random.default_rng(7)
    dirs = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0]])
    X = np.vstack([d + 0.15 * rng.standard_normal((60, 3)) for d in dirs])
    X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    ms = MeanShift(bandwidth=0.3, kernel="vmf", backend="serial").fit(X)
    assert len(ms.cluster_centers_) == 3
    assert np.allclose(np.linalg.norm(ms.cluster_centers_, axis=1), 1.0, atol=1e-5)


def test_bad_kernel_inputs_raise():
    X = np.eye(3, dtype=np.float32) * 2.0
    with pytest.raises(ValueError, match="triangle"):
        MeanShift(kernel="triangle", backend="serial").fit(X)
    with pytest.raises(ValueError, match="row 0"):
        MeanShift(kernel="vmf", backend="serial").fit(X)

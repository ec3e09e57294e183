"""Regression tests of the adversarial audit for the Python package: wide inputs, thread
counts no machine can start, bin keys that overflowed, text input and ``bandwidth=True``, and the
memory budget."""
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from meanshift import MeanShift


def test_wide_input_does_not_kill_the_interpreter():
    # MeanShift(bandwidth=1).fit(np.zeros((3, 1500000), np.float32)) overflowed a thread's stack:
    # run it in a child interpreter so a crash fails this test instead of ending the session.
    code = ("import numpy as np; from meanshift import MeanShift; "
            "est = MeanShift(bandwidth=1).fit(np.zeros((3, 1500000), np.float32)); "
            "assert est.labels_.tolist() == [0, 0, 0], est.labels_")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])


def test_huge_n_jobs_is_refused_with_the_limit():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match=r"threads = 100000 exceeds the limit of \d+"):
        MeanShift(bandwidth=1.0, n_jobs=100000, backend="openmp").fit(X)


@pytest.mark.parametrize("bandwidth", [1e-30, 1e-20])
def test_tiny_bandwidth_gives_exacts_answer(bandwidth):
    # One cluster on 3,000 blob points before (bin keys overflowed int64); every point is its own mode.
    X, _ = make_blobs(n_samples=3000, centers=3, random_state=0)
    est = MeanShift(bandwidth=bandwidth).fit(X)
    exact = MeanShift(bandwidth=bandwidth, exact=True).fit(X)
    assert adjusted_rand_score(exact.labels_, est.labels_) == 1.0
    assert len(est.cluster_centers_) == len(exact.cluster_centers_) > 2900
    assert "declined" in est.result_["seeding"]


def test_huge_coordinate_next_to_small_ones():
    X = np.array([[1e19, 1], [0, 1], [5, 5]])
    est = MeanShift(bandwidth=1.0).fit(X)
    exact = MeanShift(bandwidth=1.0, exact=True).fit(X)
    assert len(set(est.labels_.tolist())) == 3
    assert adjusted_rand_score(exact.labels_, est.labels_) == 1.0


@pytest.mark.parametrize("X", [
    np.array([["1.0", "2.0"], ["3.0", "4.0"], ["5.0", "6.0"]]),
    np.array([[b"1", b"2"], [b"3", b"4"]]),
    np.array([["1.0", 2.0], [3.0, "4.0"]], dtype=object),
    [["1", "2"], ["3", "4"]],
])
def test_numeric_strings_are_refused_like_scikit_learn(X):
    with pytest.raises(ValueError, match="strings"):
        MeanShift(bandwidth=1.0).fit(X)


def test_numeric_strings_are_refused_by_predict():
    X = np.random.default_rng(1).normal(size=(40, 2))
    est = MeanShift(bandwidth=1.0).fit(X)
    with pytest.raises(ValueError, match="strings"):
        est.predict(X.astype(str))


def test_object_arrays_of_numbers_still_work():
    X = np.random.default_rng(2).normal(size=(40, 2))
    a = MeanShift(bandwidth=1.0).fit(X.astype(object)).labels_
    b = MeanShift(bandwidth=1.0).fit(X).labels_
    assert (a == b).all()


@pytest.mark.parametrize("bandwidth", [True, False, np.True_, np.array([True, True])])
def test_boolean_bandwidth_is_refused(bandwidth):
    X = np.random.default_rng(3).normal(size=(30, 2))
    with pytest.raises(ValueError, match="bandwidth"):
        MeanShift(bandwidth=bandwidth).fit(X)


def test_max_memory_refuses_before_allocating():
    X = np.random.default_rng(4).normal(size=(2000, 4)).astype(np.float32)
    with pytest.raises(MemoryError, match=r"max_memory budget of 100 kB"):
        MeanShift(bandwidth=1.0, max_memory=100_000).fit(X)
    assert MeanShift(bandwidth=1.0, max_memory=2**40).fit(X).labels_.shape == (2000,)
    with pytest.raises(ValueError, match="max_memory"):
        MeanShift(bandwidth=1.0, max_memory=-1).fit(X)

"""meanshift.MeanShift: results against make_blobs' truth, layouts, weights, predict, errors, Ctrl-C."""
import os
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import meanshift
from meanshift import MeanShift

from conftest import usable_backends


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=3000, centers=[[0, 0], [6, 0], [0, 6], [6, 6]], cluster_std=0.8,
                      random_state=0)
    return X, y


def test_blobs_match_truth(blobs):
    X, y = blobs
    est = MeanShift(bandwidth=1.0).fit(X)
    assert est.cluster_centers_.shape == (4, 2)
    assert adjusted_rand_score(y, est.labels_) > 0.98
    # Every true centre has a fitted centre within 0.2 (data units).
    truth = np.array([[0, 0], [6, 0], [0, 6], [6, 6]], dtype=float)
    d = np.linalg.norm(truth[:, None] - est.cluster_centers_[None], axis=2)
    assert d.min(axis=1).max() < 0.2
    assert est.labels_.dtype == np.int32 and est.labels_.shape == (3000,)
    assert est.modes_.shape == X.shape and est.n_iter_ >= 1
    assert est.n_features_in_ == 2
    assert est.cluster_centers_.dtype == np.float64


def test_default_bandwidth_is_estimated(blobs):
    X, y = blobs
    est = MeanShift().fit(X)
    assert adjusted_rand_score(y, est.labels_) > 0.95


@pytest.mark.parametrize("bin_seeding", [True, False])
def test_exact_and_binned_agree(blobs, bin_seeding):
    X, y = blobs
    a = MeanShift(bandwidth=1.0, bin_seeding=bin_seeding).fit(X)
    b = MeanShift(bandwidth=1.0, exact=True).fit(X)
    assert adjusted_rand_score(a.labels_, b.labels_) > 0.99


def test_dtypes_and_layouts_give_the_same_result(blobs):
    X, _ = blobs
    ref = MeanShift(bandwidth=1.0).fit(X.astype(np.float32))
    for Xv in (X, np.asfortranarray(X), np.asfortranarray(X.astype(np.float32)), X.tolist(),
               (X * 1000).astype(np.int64)):
        est = MeanShift(bandwidth=1.0 if not isinstance(Xv, np.ndarray) or Xv.dtype != np.int64 else 1000.0)
        est.fit(Xv)
        np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert MeanShift(bandwidth=1.0).fit(X.astype(np.float32)).cluster_centers_.dtype == np.float32


def test_float32_c_array_is_not_copied(blobs):
    X = np.ascontiguousarray(blobs[0], dtype=np.float32)
    est = MeanShift(bandwidth=1.0).fit(X)
    assert np.shares_memory(est._X, X)
    Xr = X.copy()
    Xr.flags.writeable = False  # read-only input is accepted as is
    assert np.shares_memory(MeanShift(bandwidth=1.0).fit(Xr)._X, Xr)


def test_per_feature_and_per_sample_bandwidths(blobs):
    X, y = blobs
    iso = MeanShift(bandwidth=1.0).fit(X)
    diag = MeanShift(bandwidth=[1.0, 1.0]).fit(X)
    per = MeanShift(bandwidth=np.ones_like(X)).fit(X)
    np.testing.assert_array_equal(iso.labels_, diag.labels_)
    assert adjusted_rand_score(iso.labels_, per.labels_) > 0.99
    # Stretching one feature by 10 and its bandwidth with it changes nothing.
    Xs = X * [10.0, 1.0]
    np.testing.assert_array_equal(MeanShift(bandwidth=[10.0, 1.0]).fit(Xs).labels_, iso.labels_)
    with pytest.raises(ValueError, match="shape"):
        MeanShift(bandwidth=[1.0, 1.0, 1.0]).fit(X)
    with pytest.raises(ValueError):
        MeanShift(bandwidth=-1.0).fit(X)


def test_sample_weight_equals_repetition():
    X, _ = make_blobs(n_samples=300, centers=3, cluster_std=0.6, random_state=3)
    w = np.random.RandomState(0).randint(1, 4, size=len(X))
    Xr = np.repeat(X, w, axis=0)
    kw = dict(bandwidth=0.8, bin_seeding=False, cutoff=None)
    a = MeanShift(**kw).fit(X, sample_weight=w)
    b = MeanShift(**kw).fit(Xr)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, atol=5e-3)
    np.testing.assert_array_equal(np.repeat(a.labels_, w), b.labels_)
    # Weight 0: the point contributes nothing but is labelled.
    w0 = w.copy()
    w0[:10] = 0
    c = MeanShift(**kw).fit(X, sample_weight=w0)
    assert c.labels_.shape == (300,) and c.labels_.min() >= 0
    with pytest.raises(ValueError, match="sample_weight"):
        MeanShift(**kw).fit(X, sample_weight=-w)
    with pytest.raises(ValueError, match="sample_weight"):
        MeanShift(**kw).fit(X, sample_weight=w[:5])


def test_predict_runs_the_ascent(blobs):
    X, y = blobs
    est = MeanShift(bandwidth=1.0).fit(X)
    assert adjusted_rand_score(est.predict(X), est.labels_) > 0.99
    # A point between two blobs climbs into one of them; a far point reaches no cluster: -1.
    q = np.array([[3.4, 0.0], [100.0, 100.0]])
    p = est.predict(q)
    assert p[0] == est.predict([[6.0, 0.0]])[0]
    assert p[1] == -1


def test_predict_gives_minus_one_for_a_mode_no_cluster_holds():
    # A tight group of 5 points seeds nothing with min_bin_freq=10: fit labels it with the nearest
    # seed's cluster, but a new point there climbs to the group's own mode: -1 (nearest-centre
    # prediction would say 0).
    rng = np.random.RandomState(0)
    X = np.r_[rng.normal(0, 0.5, (1000, 2)), rng.normal([5, 0], 0.02, (5, 2))]
    est = MeanShift(bandwidth=0.5, min_bin_freq=10).fit(X)
    assert len(est.cluster_centers_) == 1 and (est.labels_ == 0).all()
    assert est.predict([[5.0, 0.0], [0.1, 0.0]]).tolist() == [-1, 0]


def test_explicit_seeds(blobs):
    X, y = blobs
    seeds = np.array([[0.2, 0.1], [5.8, 0.2], [0.1, 5.9], [6.1, 6.2]])
    est = MeanShift(bandwidth=1.0, seeds=seeds).fit(X)
    assert est.cluster_centers_.shape == (4, 2)
    assert adjusted_rand_score(y, est.labels_) > 0.98
    # Two seeds in one blob: one cluster; points of the unseeded blobs reach none: -1.
    est2 = MeanShift(bandwidth=1.0, seeds=seeds[:1].repeat(2, axis=0)).fit(X)
    assert est2.cluster_centers_.shape == (1, 2)
    assert set(np.unique(est2.labels_)) == {-1, 0}


def test_one_sample_and_one_feature():
    est = MeanShift().fit([[1.0, 2.0]])
    assert est.labels_.tolist() == [0]
    np.testing.assert_allclose(est.cluster_centers_, [[1.0, 2.0]])
    x = np.r_[np.random.RandomState(0).normal(0, 0.3, 100), np.random.RandomState(1).normal(5, 0.3, 100)]
    est = MeanShift(bandwidth=0.5).fit(x[:, None])
    assert len(est.cluster_centers_) == 2
    np.testing.assert_allclose(np.sort(est.cluster_centers_[:, 0]), [0, 5], atol=0.15)


@pytest.mark.parametrize("bad, match", [
    (np.array([[1.0, np.nan]] * 3), "NaN"),
    (np.array([[1.0, np.inf]] * 3), "infinity"),
    (np.zeros((0, 2)), "0 sample"),
    (np.zeros((3, 0)), "0 feature"),
    (np.array([1.0, 2.0, 3.0]), "2D array"),
    (np.array([["a", "b"]]), "could not convert|dtype"),
    (np.array([[1 + 1j, 2]]), "Complex"),
    (np.array([[1e300, 0.0]] * 3), "float32"),
])
def test_bad_input_raises_value_error(bad, match):
    with pytest.raises(ValueError, match=match):
        MeanShift(bandwidth=1.0).fit(bad)


def test_predict_checks_features(blobs):
    est = MeanShift(bandwidth=1.0).fit(blobs[0])
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((2, 3)))


def test_bad_parameters():
    X = np.zeros((5, 2))
    for kw in (dict(backend="nosuch"), dict(cutoff=0.0), dict(max_iter=0), dict(grouping="x"),
               dict(search="x"), dict(tol=-1.0), dict(n_jobs=0)):
        with pytest.raises(ValueError):
            MeanShift(bandwidth=1.0, **kw).fit(X)
    # The library's own messages come through: an unknown tuning key names the key.
    with pytest.raises(ValueError, match="nosuch"):
        MeanShift(bandwidth=1.0, tune={"nosuch": "1"}).fit(X)


def test_unusable_backend_raises_package_exception():
    bad = [b for b in meanshift.backends() if not b["usable"]]
    if not bad:
        pytest.skip("every backend is usable on this machine")
    with pytest.raises(meanshift.BackendUnavailableError) as e:
        MeanShift(bandwidth=1.0, backend=bad[0]["name"]).fit(np.zeros((5, 2)))
    assert bad[0]["name"] in str(e.value)
    assert isinstance(e.value, meanshift.MeanShiftError) and isinstance(e.value, RuntimeError)


def test_backends_listing():
    names = [b["name"] for b in meanshift.backends()]
    assert names[:1] == ["serial"] and set(names) <= {"serial", "openmp", "opencl", "cuda"}
    serial = meanshift.backends()[0]
    assert serial["usable"] and serial["compiled_in"] and serial["devices"]
    assert meanshift.auto_backend() in usable_backends()


@pytest.mark.parametrize("backend", usable_backends())
def test_every_backend_clusters_blobs(blobs, backend):
    X, y = blobs
    est = MeanShift(bandwidth=1.0, backend=backend).fit(X)
    assert est.backend_ == backend
    assert adjusted_rand_score(y, est.labels_) > 0.98


def test_progress_callback_and_cancel(blobs, capsys):
    X, _ = blobs
    calls = []
    MeanShift(bandwidth=1.0, progress=lambda i, a, t: calls.append((i, a, t))).fit(X)
    assert [c[0] for c in calls] == list(range(1, len(calls) + 1))
    assert calls[-1][1] == 0 and all(c[2] == calls[0][2] for c in calls)
    with pytest.raises(meanshift.MeanShiftError, match="cancelled"):
        MeanShift(bandwidth=1.0, progress=lambda i, a, t: False).fit(X)

    def boom(i, a, t):
        raise ZeroDivisionError("from the callback")
    with pytest.raises(ZeroDivisionError, match="from the callback"):
        MeanShift(bandwidth=1.0, progress=boom).fit(X)
    MeanShift(bandwidth=1.0, verbose=True).fit(X)
    assert "modes moving" in capsys.readouterr().err


def _long_fit():
    # serial, exact kernel, every point a seed: seconds per iteration.
    X, _ = make_blobs(n_samples=6000, centers=5, random_state=0)
    return X, MeanShift(bandwidth=0.2, backend="serial", exact=True, max_iter=1000, tol=0.0)


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to itself")
def test_ctrl_c_cancels_a_long_run():
    X, est = _long_fit()
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        est.fit(X)
    # Cancelled after the iteration that was running (a few seconds at most), not at the end.
    assert time.perf_counter() - t0 < 10


def test_gil_is_released_during_fit():
    # The progress callback runs with the GIL between iterations; this thread must also run while
    # an iteration computes, i.e. at some tick strictly between two callbacks.
    X, est = _long_fit()
    calls = []
    est.set_params(max_iter=3, progress=lambda i, a, t: calls.append(time.perf_counter()))
    t = threading.Thread(target=est.fit, args=(X,))
    ticks = []
    t.start()
    while t.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    assert len(calls) == 3 and est.labels_.shape == (6000,)
    # Holding the GIL, the fit would let this thread in only at the callbacks: <= 1 tick per interval.
    during = max(sum(calls[i] < x < calls[i + 1] for x in ticks) for i in range(2))
    assert during >= 5, (calls, len(ticks))


def test_pickle_and_clone_keep_predictions(blobs):
    import pickle
    from sklearn.base import clone
    X, _ = blobs
    est = MeanShift(bandwidth=1.0).fit(X)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X[:50]), est2.predict(X[:50]))
    assert clone(est).get_params() == est.get_params()


def test_assign_nearest_labels_by_nearest_centre(blobs):
    X, y = blobs
    est = MeanShift(bandwidth=1.0, assign="nearest").fit(X)
    d = np.linalg.norm(X[:, None, :] - est.cluster_centers_[None], axis=2)
    np.testing.assert_array_equal(est.labels_, d.argmin(axis=1))
    assert adjusted_rand_score(y, est.labels_) > 0.98
    with pytest.raises(ValueError, match="assign"):
        MeanShift(bandwidth=1.0, assign="x").fit(X)


def test_refine_boundaries_brings_bin_seeding_closer_to_exact():
    # Touching blobs: refinement re-seeds the boundary bins (measured: ARI vs exact 0.990 vs 0.972).
    X, _ = make_blobs(n_samples=5000, n_features=2, centers=5, cluster_std=1.0, random_state=0)
    exact = MeanShift(bandwidth=0.7, exact=True).fit(X)
    refined = MeanShift(bandwidth=0.7).fit(X)
    plain = MeanShift(bandwidth=0.7, refine_boundaries=False).fit(X)
    assert "re-seeded" in refined.result_["seeding"] and "re-seeded" not in plain.result_["seeding"]
    a, b = adjusted_rand_score(exact.labels_, refined.labels_), adjusted_rand_score(exact.labels_, plain.labels_)
    assert a > 0.985 and a > b + 0.01


def test_tree_search_and_gemm_form_agree_with_exact():
    # 8-D blobs: the kd-tree search (search='tree') and the matrix-product step (tune pair_form=gemm)
    # give the exact answer's clusters; the report says which search ran.
    rng = np.random.default_rng(3)
    centres = rng.normal(0.0, 8.0, size=(4, 8))
    X = np.concatenate([c + rng.normal(0.0, 0.5, size=(60, 8)) for c in centres]).astype(np.float32)
    truth = np.repeat(np.arange(4), 60)
    exact = MeanShift(bandwidth=1.0, exact=True, backend="openmp").fit(X)
    assert adjusted_rand_score(truth, exact.labels_) == 1.0
    tree = MeanShift(bandwidth=1.0, search="tree", bin_seeding=False, backend="openmp").fit(X)
    assert "tree" in tree.result_["search"]
    assert adjusted_rand_score(exact.labels_, tree.labels_) == 1.0
    gemm = MeanShift(bandwidth=1.0, exact=True, backend="openmp", tune={"pair_form": "gemm"}).fit(X)
    assert adjusted_rand_score(exact.labels_, gemm.labels_) == 1.0
    np.testing.assert_allclose(np.sort(gemm.cluster_centers_, axis=0), np.sort(exact.cluster_centers_, axis=0),
                               atol=1e-4)


def test_result_reports_every_stage_and_peak_memory():
    # The Python estimator reports each stage of the run and the peak memory.
    X = np.vstack([np.random.RandomState(4).normal(c, 0.3, (60, 2)) for c in (0.0, 5.0)])
    t = MeanShift(bandwidth=1.0).fit(X).result_["timing"]
    assert list(t["stages"]) == ["validate", "seeding", "search", "bind", "order", "iterate", "grouping", "label"]
    assert all(v >= 0 for v in t["stages"].values())
    assert t["stages"]["iterate"] > 0
    assert sum(t["stages"].values()) <= t["seconds_total"] * 1.01 + 1e-3
    assert t["peak_memory_bytes"] > 10 * X.nbytes

"""meanshift.MeanShift: a scikit-learn estimator over the C++ library."""
from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _core
from ._common import library_options, progress_function, refuse_non_numeric

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def _validate_data(estimator, X, **kwargs):
        return estimator._validate_data(X, **kwargs)

_F32_MAX = float(np.finfo(np.float32).max)


def _as_float32(X: np.ndarray, what: str) -> np.ndarray:
    """C-contiguous float32, the library's layout: no copy when X already is one."""
    if X.dtype != np.float32 and X.size and np.abs(X).max() > _F32_MAX:
        raise ValueError(f"{what} has values beyond float32's range (|x| <= {_F32_MAX:.3g}): "
                         "the library computes in float32")
    return np.ascontiguousarray(X, dtype=np.float32)


def _nearest(P: np.ndarray, centres: np.ndarray, scale: np.ndarray):
    """For each row of P: the nearest centre and the squared distance, in bandwidth units.

    One pass per centre keeps memory at O(n) (no n x c x k array)."""
    Ps = P.astype(np.float64) / scale
    Cs = centres.astype(np.float64) / scale
    best = np.zeros(P.shape[0], dtype=np.int32)
    d2best = np.full(P.shape[0], np.inf)
    for c in range(Cs.shape[0]):
        d2 = ((Ps - Cs[c]) ** 2).sum(axis=1)
        closer = d2 < d2best
        best[closer] = c
        d2best[closer] = d2[closer]
    return best, d2best


class MeanShift(ClusterMixin, BaseEstimator):
    """Gaussian mean shift clustering (Malysiak & Handmann skeleton) on CPUs and GPUs.

    Follows scikit-learn's conventions (``fit``, ``predict``, ``fit_predict``, ``get_params``,
    ``set_params``, ``clone``); parameter names follow ``sklearn.cluster.MeanShift`` where the two
    mean the same. Every point's ascent uses a Gaussian kernel whose standard deviation is the
    bandwidth (scikit-learn's MeanShift uses a flat kernel of radius ``bandwidth``: a flat radius r
    corresponds to roughly r/2 here, see docs/python.md).

    Parameters
    ----------
    bandwidth : float, array of shape (n_features,), array of shape (n_samples, n_features), str or None
        Kernel standard deviation(s) in data units: one for all features, one per feature, or one
        row per training sample (variable-bandwidth mean shift). Or a rule computed from X by the
        library (docs/bandwidth-selection.md); ``bandwidth_`` holds the value used:

        - None or ``'auto'``: ``'quantile:0.3'``.
        - ``'quantile:Q'``: scikit-learn's ``estimate_bandwidth(X, quantile=Q)`` (mean distance to
          the floor(Q n)-th nearest neighbour, on at most 10,000 samples), divided by 2 (its
          flat-kernel radius as a Gaussian standard deviation); 1.0 if that is 0.
        - ``'scott'``, ``'silverman'``: normal-reference rules, isotropic; ``'scott:per-dim'``,
          ``'silverman:per-dim'``: one per feature.
        - ``'adaptive'``, ``'adaptive:K'``, ``'adaptive:K:C'``: one per sample, sigma_i = C times the
          max(1.6 d^-0.8 d_K(x_i), 1.1 s_i): d_K(x_i) the distance from sample i to its K-th
          nearest neighbour, d the data's intrinsic dimension (Levina-Bickel estimate), s_i the
          width at which the K neighbours of sample i weigh as much as the sample itself
          (defaults: K = round(sqrt(n)), at least 5, C = 1). K should stay below the
          smallest cluster's size.
        - ``'abramson'``, ``'abramson:C'``, ``'abramson:C:P'``: one per sample from a pilot density
          (Abramson 1982): sigma_i = C sigma_p (f(x_i)/g)^(-1/2), f the pilot Gaussian density with
          sigma_p = P (default: Silverman's rule), g its geometric mean; default C = 2.
    seeds : array of shape (n_seeds, n_features) or None
        Explicit starting points: the clusters are the groups of the seeds' modes, and every
        sample is then labelled by its own ascent as ``predict`` does (-1 when it reaches no
        seed's cluster). None: see ``bin_seeding``.
    bin_seeding : bool, default=True
        True: seeds are the means of the occupied bins of a grid of side ``bin_size`` bandwidths
        and every sample takes its bin's label (scikit-learn's ``bin_seeding``, the library's
        default). False: every sample makes its own ascent.
    bin_size : float, default=0.5
        Bin side in bandwidths (scikit-learn bins at one bandwidth).
    min_bin_freq : int, default=1
        Bins with fewer samples seed nothing (their samples take the nearest seed's label).
    refine_boundaries : bool, default=True
        Bin seeding: bins on a basin boundary (a neighbouring bin's seed joined another cluster)
        are re-seeded on bins of bin_size/4 (the library's Options::refine_boundaries).
    cutoff : float or None, default=3.0
        Truncated kernel: pairs farther than ``cutoff`` bandwidths get weight 0, which lets a grid
        search skip them. None: the exact kernel.
    exact : bool, default=False
        True: the exact kernel, brute force, every sample a seed, no binning (overrides
        ``cutoff``, ``bin_seeding`` and ``bin_data``).
    search : {'auto', 'grid', 'tree', 'brute'}, default='auto'
        Neighbour search for a finite cutoff: a uniform cell grid (low dimensions), a kd-tree
        (nanoflann; the host backends walk it, GPU backends brute-force), or brute force; 'auto'
        picks the one that prunes best (docs/truncated-kernel.md).
    bin_data : bool, default=False
        Replace the samples by their bin means (weighted by counts) before the ascent.
    assign : {'ascent', 'nearest'}, default='ascent'
        How training samples get their label: 'ascent', the cluster their own ascent (or their
        bin's) joins; 'nearest', the nearest cluster centre in bandwidth units, as scikit-learn's
        MeanShift labels them (clusters left without a sample are dropped).
    max_iter : int, default=100
        Iterations per mode at most.
    tol : float, default=1e-3
        A mode stops when its shift is at most ``tol`` bandwidths.
    merge_eps : float, default=0.5
        Modes closer than this many bandwidths form one cluster.
    grouping : {'sequential', 'components', 'sklearn'}, default='sequential'
        'sequential': a mode joins the first cluster whose first mode lies within ``merge_eps``
        (Alg. 6); 'components': connected components of the "closer than merge_eps" graph;
        'sklearn': scikit-learn's MeanShift grouping (modes ranked by their support, a mode
        within ``merge_eps`` of a kept one dropped, every sample to its nearest kept mode).
    kernel : {'gaussian', 'flat', 'epanechnikov', 'biweight', 'triweight', 'vmf'}, default='gaussian'
        Weight profile of the mean-shift step. 'gaussian': ``bandwidth`` is the kernel's sigma;
        'flat' (scikit-learn's kernel: the mean of the points within the radius), 'epanechnikov',
        'biweight' and 'triweight': ``bandwidth`` is the radius, exact (``cutoff`` does not apply); 'vmf':
        von Mises-Fisher on unit vectors (rows of norm 1 within 1e-3), one isotropic
        ``bandwidth`` h with concentration kappa = 1/h**2, modes kept on the unit sphere.
        A backend without the profile raises ``meanshift.BackendUnavailableError``; 'auto'
        picks one that has it.
    blurring : bool, default=False
        Blurring mean shift (Carreira-Perpinan 2006): the samples themselves move every
        iteration; the moved samples are then grouped like modes.
    backend : {'auto', 'serial', 'openmp', 'opencl', 'cuda'}, default='auto'
        Where it runs; ``meanshift.backends()`` lists what is usable here. An unusable one raises
        ``meanshift.BackendUnavailableError``.
    device : str, int, list of int or None
        OpenCL ``"P:D"`` (platform:device) or device indices (CUDA). None: the backend's default.
    n_jobs : int or None
        OpenMP threads (None or -1: all cores).
    tune : dict or None
        Typed tuning overrides, e.g. ``{"openmp.isa": "avx2"}`` (the CLI's ``--tune key=value``).
    max_memory : int or None
        Memory budget of a fit in bytes: a fit whose estimated working set (the library's
        ``estimate_memory``) exceeds it raises ``MemoryError`` before allocating it. None or 0: the
        machine's available physical memory.
    verbose : bool, default=False
        Print the iteration and the modes still moving on stderr.
    progress : callable or None
        Called after every iteration as ``progress(iteration, active_modes, total_modes)``;
        returning False cancels the run (``meanshift.MeanShiftError``).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int32
        Cluster of each training sample, in [0, n_clusters); cluster 0 is the largest.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Mean of the modes of each cluster, in the dtype of X (float32 or float64).
    modes_ : ndarray of shape (n_samples, n_features)
        Where each sample's ascent (or its bin's) ended.
    n_iter_ : int
        Iterations of the longest ascent.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when X has string column names (a pandas DataFrame).
    bandwidth_ : float or ndarray of shape (n_features,) or (n_samples, n_features)
        The bandwidth used (standard deviations in data units), after a rule was applied.
    backend_ : str
        The backend that ran (what 'auto' resolved to).
    result_ : dict
        The library's full report: iterations and convergence per mode, timing, search, seeding.
        ``result_["timing"]["stages"]`` holds the seconds of every stage in run order (validate,
        seeding, search, bind, order, iterate, grouping, label) and
        ``result_["timing"]["peak_memory_bytes"]`` the process's peak resident memory.
    """

    def __init__(
        self,
        *,
        bandwidth=None,
        seeds=None,
        bin_seeding=True,
        bin_size=0.5,
        min_bin_freq=1,
        refine_boundaries=True,
        cutoff=3.0,
        exact=False,
        search="auto",
        bin_data=False,
        assign="ascent",
        max_iter=100,
        tol=1e-3,
        merge_eps=0.5,
        grouping="sequential",
        kernel="gaussian",
        blurring=False,
        backend="auto",
        device=None,
        n_jobs=None,
        tune=None,
        max_memory=None,
        verbose=False,
        progress=None,
    ):
        self.bandwidth = bandwidth
        self.seeds = seeds
        self.bin_seeding = bin_seeding
        self.bin_size = bin_size
        self.min_bin_freq = min_bin_freq
        self.refine_boundaries = refine_boundaries
        self.cutoff = cutoff
        self.exact = exact
        self.search = search
        self.bin_data = bin_data
        self.assign = assign
        self.max_iter = max_iter
        self.tol = tol
        self.merge_eps = merge_eps
        self.grouping = grouping
        self.kernel = kernel
        self.blurring = blurring
        self.backend = backend
        self.device = device
        self.n_jobs = n_jobs
        self.tune = tune
        self.max_memory = max_memory
        self.verbose = verbose
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    # -- helpers ---------------------------------------------------------------------------------

    def _options(self):
        if self.cutoff is not None and (not isinstance(self.cutoff, Real) or not self.cutoff > 0):
            raise ValueError(f"cutoff must be > 0 or None (exact kernel), got {self.cutoff!r}")
        if self.search not in ("auto", "grid", "tree", "brute"):
            raise ValueError(f"search must be 'auto', 'grid', 'tree' or 'brute', got {self.search!r}")
        if self.assign not in ("ascent", "nearest"):
            raise ValueError(f"assign must be 'ascent' or 'nearest', got {self.assign!r}")
        if self.grouping not in ("sequential", "components", "sklearn"):
            raise ValueError(f"grouping must be 'sequential', 'components' or 'sklearn', got {self.grouping!r}")
        if not isinstance(self.kernel, str):
            raise ValueError(f"kernel must be a profile name ({', '.join(_core.kernel_profiles())}), got {self.kernel!r}")
        o = library_options(
            backend=self.backend, device=self.device, n_jobs=self.n_jobs, tune=self.tune,
            max_iter=self.max_iter, tol=self.tol, merge_eps=self.merge_eps, grouping=self.grouping,
            cutoff=self.cutoff, exact=self.exact, search=self.search,
            seeding="bins" if self.bin_seeding else "all", bin_size=self.bin_size,
            min_bin_freq=self.min_bin_freq, bin_data=self.bin_data,
            refine_boundaries=self.refine_boundaries, max_memory=self.max_memory)
        # Passed through by name: the library parses them (unknown names raise ValueError there).
        o["kernel"] = self.kernel
        o["blurring"] = bool(self.blurring)
        return o

    def _bandwidth(self, X: np.ndarray, opts=None):
        """The library's bandwidth argument: a float, a (k,) or an (n, k) float64 array."""
        n, k = X.shape
        h = self.bandwidth
        if h is None:
            h = "auto"
        if isinstance(h, str):
            return self._bandwidth_rule(h, X, opts)
        if isinstance(h, (bool, np.bool_)) or getattr(np.asarray(h), "dtype", None) == np.bool_:
            # True is an int in Python; as a bandwidth it is a mistake, not 1.0.
            raise ValueError(f"bandwidth must be a number, an array, None or a rule name, got {h!r}")
        if isinstance(h, Real):
            if not np.isfinite(h) or h <= 0:
                raise ValueError(f"bandwidth must be finite and > 0, got {h!r}")
            return float(h)
        a = np.asarray(h, dtype=np.float64)
        if a.ndim == 0:
            return self._bandwidth_scalar(float(a))
        if a.ndim == 1 and a.shape[0] == k:
            out = np.ascontiguousarray(a)
        elif a.ndim == 2 and a.shape == (n, k):
            out = np.ascontiguousarray(a)
        else:
            raise ValueError(f"bandwidth must be a number, an array of shape ({k},) (one per feature) or "
                             f"({n}, {k}) (one row per sample), got shape {a.shape}")
        if not np.all(np.isfinite(out)) or np.any(out <= 0):
            raise ValueError("bandwidth values must be finite and > 0")
        return out

    @staticmethod
    def _bandwidth_rule(rule: str, X: np.ndarray, opts=None):
        """A bandwidth rule by name, computed by the library on X as float32 (what it clusters)."""
        usage = ("bandwidth must be a number, an array, None or one of 'auto', 'quantile:Q', 'scott', "
                 "'silverman', 'scott:per-dim', 'silverman:per-dim', 'adaptive', 'adaptive:K', "
                 f"'adaptive:K:C', 'adaptive::C', 'abramson', 'abramson:C', 'abramson:C:P'; got {rule!r}")
        Xf = _as_float32(X, "X")
        name, _, arg = rule.partition(":")
        if rule == "auto" or name == "quantile":
            try:
                q = 0.3 if rule == "auto" else float(arg)
            except ValueError:
                raise ValueError(usage) from None
            r = _core.estimate_bandwidth(Xf, q, 10_000, 0)
            # scikit-learn's flat radius -> Gaussian standard deviation; 1.0 when the estimate is 0.
            h = r * _core.flat_radius_to_sigma
            return h if h > 0 and np.isfinite(h) else 1.0
        if name in ("scott", "silverman"):
            if arg == "":
                return float(_core.rule_bandwidth(Xf, name))
            if arg == "per-dim":
                return np.ascontiguousarray(_core.rule_bandwidths(Xf, name), dtype=np.float64)
            raise ValueError(usage)
        if name in ("adaptive", "abramson"):
            # adaptive[:K[:C]] (K an int, defaults: automatic K, the library's C); abramson[:C[:P]]
            # (defaults: C = 2, P = 0, the pilot from Silverman's rule). An empty field keeps its
            # default ('adaptive::1.3'), as in the CLI.
            types, defaults = ((int, float), [0, _core.default_adaptive_c]) if name == "adaptive" else ((float, float), [2.0, 0.0])
            parts = arg.split(":") if arg else []
            if len(parts) > len(types):
                raise ValueError(usage)
            try:
                values = [t(v) if v else d for t, v, d in zip(types, parts, defaults)] + defaults[len(parts):]
            except ValueError:
                raise ValueError(usage) from None
            if name == "adaptive":
                if parts and parts[0] and values[0] < 1:
                    raise ValueError(usage)
                # The k-NN search runs on the estimator's backend (brute force on a GPU under cuda/opencl).
                flat = _core.adaptive_bandwidths(Xf, values[0], values[1], False, 0.1, opts if opts is not None else {})
            else:
                flat = _core.abramson_bandwidths(Xf, values[0], values[1])
            return np.ascontiguousarray(np.asarray(flat, dtype=np.float64).reshape(X.shape))
        raise ValueError(usage)

    @staticmethod
    def _bandwidth_scalar(h: float):
        if not np.isfinite(h) or h <= 0:
            raise ValueError(f"bandwidth must be finite and > 0, got {h!r}")
        return h

    @staticmethod
    def _scale(bw, k: int) -> np.ndarray:
        """Per feature: the bandwidth unit in which the library measures merge_eps (for per-sample
        bandwidths the geometric mean over the samples, as the library's preparation does)."""
        if isinstance(bw, float):
            return np.full(k, bw)
        if bw.ndim == 1:
            return bw
        return np.exp(np.log(bw).mean(axis=0))

    # -- scikit-learn API ------------------------------------------------------------------------

    def fit(self, X, y=None, sample_weight=None):
        """Clusters X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            float32 or float64 (other numeric types are converted to float32). A C-contiguous
            float32 array is passed to the library without a copy.
        y : ignored
        sample_weight : array-like of shape (n_samples,) or None
            Non-negative weights (not all 0): a sample of weight w counts like w samples in the
            density. A sample of weight 0 is still labelled.

        Returns
        -------
        self
        """
        refuse_non_numeric(X)
        X = _validate_data(self, X, dtype=[np.float32, np.float64], ensure_min_samples=1, reset=True)
        opts = self._options()
        bw = self._bandwidth(X, opts)
        Xf = _as_float32(X, "X")
        w = None
        if sample_weight is not None:
            # scikit-learn's checks and messages (shape, finite, non-negative), then the library's rule.
            w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            if not np.any(w > 0):
                raise ValueError("sample_weight: every weight is zero (at least one must be > 0)")
            w = np.ascontiguousarray(w, dtype=np.float32)
        seeds = None
        if self.seeds is not None:
            seeds = _as_float32(np.asarray(self.seeds, dtype=np.float64), "seeds")
            if seeds.ndim != 2 or seeds.shape[1] != X.shape[1]:
                raise ValueError(f"seeds must have shape (n_seeds, {X.shape[1]}), got {seeds.shape}")
        progress = progress_function(self.progress, self.verbose, "MeanShift.fit")
        r = _core.cluster(Xf, bw, w, seeds, opts, progress)
        self._X = Xf
        self._weights = w
        self._bw = bw
        self._opts = opts
        if w is not None and seeds is None:
            # The library numbers clusters by point count; with weights, number them by total
            # weight instead (largest first), so that a weight of 2 means the same as a repeated
            # sample (scikit-learn's sample_weight contract).
            wsize = np.bincount(r["labels"], weights=w.astype(np.float64), minlength=len(r["centres"]))
            order = np.argsort(-wsize, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            r["labels"] = rank[r["labels"]].astype(np.int32)
            r["centres"] = r["centres"][order]
            r["cluster_sizes"] = r["cluster_sizes"][order]
        self.cluster_centers_ = r["centres"].astype(X.dtype, copy=False)
        if seeds is None:
            self.labels_ = r["labels"]
            self.modes_ = r["modes"].astype(X.dtype, copy=False)
            self.n_iter_ = int(r["timing"]["iterations"])
        else:
            # The library labelled the seeds; the samples take the cluster their own ascent joins.
            self._seed_modes = r["modes"]
            self.labels_, modes, it = self._ascend(Xf)
            self.modes_ = modes.astype(X.dtype, copy=False)
            self.n_iter_ = max(int(r["timing"]["iterations"]), it)
        if self.assign == "nearest":
            labels, _ = _nearest(Xf, self.cluster_centers_, self._scale(bw, X.shape[1]))
            used = np.unique(labels)
            remap = np.zeros(len(self.cluster_centers_), dtype=np.int32)
            remap[used] = np.arange(len(used), dtype=np.int32)
            self.labels_ = remap[labels]
            self.cluster_centers_ = self.cluster_centers_[used]
        self.bandwidth_ = bw
        self.backend_ = r["backend"]
        self.result_ = r
        return self

    def _ascend(self, Xq: np.ndarray):
        """Ascents from the rows of Xq against the fitted data; labels by the rule of predict."""
        progress = progress_function(self.progress, self.verbose, "MeanShift.predict")
        r = _core.cluster(self._X, self._bw, self._weights, Xq, self._opts, progress)
        modes = r["modes"]
        k = modes.shape[1]
        scale = self._scale(self._bw, k)
        best, d2 = _nearest(modes, self.cluster_centers_, scale)
        labels = np.where(d2 <= self._opts["merge_eps"] ** 2, best, -1).astype(np.int32)
        return labels, modes, int(r["timing"]["iterations"])

    def predict(self, X):
        """Cluster of new points by their own ascent against the fitted data.

        Each row of X starts a mean-shift ascent on the training data (same bandwidth, weights,
        kernel and convergence settings as fit). Its mode joins the fitted cluster whose centre is
        nearest, if that centre lies within ``merge_eps`` bandwidths of the mode (the distance
        fit's grouping uses); otherwise the label is -1: the point climbs to a mode that no fitted
        cluster holds (scikit-learn's MeanShift.predict instead takes the nearest centre of X
        itself, which can put a point in a cluster its ascent never reaches).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features_in_)

        Returns
        -------
        labels : ndarray of shape (n_queries,), int32, in [-1, n_clusters)
        """
        check_is_fitted(self)
        refuse_non_numeric(X)
        X = _validate_data(self, X, dtype=[np.float32, np.float64], reset=False)
        labels, _, _ = self._ascend(_as_float32(X, "X"))
        return labels

    def fit_predict(self, X, y=None, sample_weight=None):
        """fit(X, sample_weight=sample_weight).labels_: the cluster of every training sample."""
        return self.fit(X, sample_weight=sample_weight).labels_
